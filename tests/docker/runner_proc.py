"""A stand-in runner process for the leak tests: starts containers, then dies in the way it is told.

    python -m tests.docker.runner_proc RUN_ID hold|raise [N]
hold: print READY and sleep (the test sends SIGINT or SIGKILL); raise: die on an uncaught exception
without calling stop(). Either way, the runner's own atexit hook or a later cleanup() must remove them.
"""

from __future__ import annotations

import sys
import time

from mimo_core.config import EnvironmentConfig
from mimo_core.environments.base import SandboxSpec
from mimo_core.environments.docker.environment import DockerEnvironment


def main() -> None:
    run_id, mode = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    for i in range(n):
        spec = SandboxSpec(
            image="mimo-base:bookworm", labels={"mimoagent.run_id": run_id, "mimoagent.instance": f"i{i}"}
        )
        DockerEnvironment(spec, EnvironmentConfig(environment_class="docker")).start()
    print("READY", flush=True)
    if mode == "raise":
        raise RuntimeError("runner crashed")
    time.sleep(600)


if __name__ == "__main__":
    main()
