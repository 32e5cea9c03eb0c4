"""A run that ends on its own before the first stop signal's unwind reaches the main thread, as one
does under load when every rollout is cancelled at once: the unwind is held back (blocked on the main
thread) until the CLI's `main()` has returned, then let through.

    python -m tests.core.late_unwind_proc MISSING_CONFIG

Prints the exit code `main()` gave; a late unwind must not raise once it has.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from mimo_core.cli import signals as stop_signals
from mimo_core.cli.main import main


def _wait(what: str, done) -> None:
    deadline = time.monotonic() + 60
    while not done():
        if time.monotonic() > deadline:
            raise SystemExit(f"late_unwind_proc: {what} never happened")
        time.sleep(0.01)


if __name__ == "__main__":
    stop_signals.install()
    signal.pthread_sigmask(signal.SIG_BLOCK, [stop_signals._UNWIND])
    os.kill(os.getpid(), signal.SIGTERM)
    _wait("the unwind being sent", lambda: stop_signals._UNWIND in signal.sigpending())
    code = main(["-c", sys.argv[1], "--dataset", sys.argv[1], "-o", sys.argv[1] + ".out"])  # ends at once: no config
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [stop_signals._UNWIND])  # the unwind lands now
    print(f"main returned {code}", flush=True)
    sys.exit(code)
