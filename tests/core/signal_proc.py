"""A runner whose main thread spends its time inside a sandbox's `interrupt()`, as a runner unwinding
from its first stop signal does, with a command running in the sandbox. It installs the CLI's signal
handling, prints READY, and keeps interrupting until a signal ends it.

    python -m tests.core.signal_proc SANDBOX_ROOT
"""

from __future__ import annotations

import sys
import threading
import time

from mimo_core.cli.signals import install
from mimo_core.config import EnvironmentConfig
from mimo_core.environments.base import SandboxSpec
from mimo_core.environments.local.environment import LocalEnvironment
from mimo_core.environments.local.procs import SANDBOX_VAR, marked_pids


def main() -> None:
    install()
    env = LocalEnvironment(
        SandboxSpec(cwd="/testbed", timeout=120), EnvironmentConfig(backend_kwargs={"root": sys.argv[1]})
    )
    env.start()
    threading.Thread(target=env.execute, args=("sleep 60",), name="rollout-0", daemon=True).start()
    while not marked_pids(SANDBOX_VAR, env.sandbox_id):
        time.sleep(0.01)
    print("READY", flush=True)
    while True:
        try:
            while True:
                env.interrupt()
                time.sleep(0.001)  # (the lock is free now and then, so other threads can take it)
        except KeyboardInterrupt:
            continue  # the first signal: go on unwinding, which means interrupting


if __name__ == "__main__":
    main()
