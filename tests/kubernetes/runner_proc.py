"""A stand-in runner process for the pod leak tests: starts pods, then dies in the way it is told.

    python -m tests.kubernetes.runner_proc RUN_ID hold|raise [N]
hold: print READY and sleep (the test sends SIGINT, SIGTERM or SIGKILL); raise: die on an uncaught exception
without calling stop(). Signals take the CLI's own path (`stop_signals.install`), so the runner's atexit
hook or a later cleanup() must delete the pods. KUBECONFIG comes from the test.
"""

from __future__ import annotations

import sys
import time

from mimo_core.cli.signals import install
from mimo_core.config import EnvironmentConfig
from mimo_core.environments.base import SandboxSpec
from mimo_core.environments.kubernetes.environment import KubernetesEnvironment


def main() -> None:
    install()
    run_id, mode = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    for i in range(n):
        spec = SandboxSpec(
            image="mimo-base:bookworm",
            network=i % 2 == 0,
            labels={"mimoagent.run_id": run_id, "mimoagent.instance": f"i{i}"},
        )
        KubernetesEnvironment(spec, EnvironmentConfig(environment_class="kubernetes")).start()
    print("READY", flush=True)
    if mode == "raise":
        raise RuntimeError("runner crashed")
    time.sleep(600)


if __name__ == "__main__":
    main()
