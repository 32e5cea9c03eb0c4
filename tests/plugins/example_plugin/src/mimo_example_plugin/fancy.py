"""A tool that needs the `fancy` extra: its module imports a package that is not installed, so a config
naming it fails at load with the install command (`pip install 'mimo-example-plugin[fancy]'`)."""

from __future__ import annotations

import mimo_example_absent  # noqa: F401  (the extra's package)


class FancyTool:
    pass
