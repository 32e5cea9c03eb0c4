"""`python -m mimo_core.cli`: the `mimoagent` command."""

import sys

from mimo_core.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
