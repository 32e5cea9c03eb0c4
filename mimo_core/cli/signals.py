"""SIGTERM, SIGHUP and Ctrl-C: the first stops the run the Ctrl-C way, a second stops it at once.

The first signal cancels every running batch (commands and model calls are cut short, rollouts record
`interrupted` and remove their sandboxes) and unwinds the main thread with KeyboardInterrupt; a second
kills and removes every sandbox, gives the rollouts a moment to write what they have, and exits 130.

No work runs in a signal handler. The handler the interpreter calls does nothing; the C-level one
writes the signal's number to a pipe (`signal.set_wakeup_fd`) the moment it arrives, even while the
main thread is stuck, and a watcher thread does the work. (A handler that did the work itself ran on
the main thread, so a second signal that landed while the first one's `interrupt()` held a sandbox's
lock waited for that lock forever.) The main thread is unwound by a private real-time signal whose
handler raises KeyboardInterrupt, sent to it alone, which also wakes a blocking wait. Under load the
run can end on its own (every rollout cancelled) before that signal lands: the entry point then calls
`leave()`, after which the unwind does nothing and the stop is still reported (exit 130).
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
from typing import NoReturn

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_UNWIND = signal.SIGRTMAX  # ours alone: delivered to the main thread as KeyboardInterrupt
STOP_NOW_GRACE_S = 2.0  # after a second signal: time the rollouts get to write traj.json and their record
STOP_NOW_DEADLINE_S = STOP_NOW_GRACE_S + 3.0  # then the process exits whatever is still running

_installed = False
_stopping = threading.Event()  # a stop signal came
_unwinding = True  # the main thread still wants the unwind (False once the entry point is leaving)


def install() -> None:
    """Route the stop signals through the watcher (main thread only; elsewhere signals are not ours)."""
    global _installed, _unwinding
    if threading.current_thread() is not threading.main_thread():
        return
    _unwinding = True
    if _installed:
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    for fd in (read_fd, write_fd):
        os.set_inheritable(fd, False)
    for signum in STOP_SIGNALS:
        signal.signal(signum, _noted)
    signal.signal(_UNWIND, _unwind)
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    threading.Thread(
        target=_watch, args=(read_fd, threading.main_thread().ident), name="mimo-signals", daemon=True
    ).start()
    atexit.register(_exiting)  # registered first, so it runs after every other exit hook
    _installed = True


def _exiting() -> None:
    """The interpreter is about to tear down, cleanup done: it would put the signals back to their
    default (killing the process with the signal's own status) while a stop already under way ends
    with 130. A signal arriving now changes nothing."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def leave() -> bool:
    """The entry point is returning: an unwind still on its way is dropped. True if a stop signal came
    (the run then ends as stopped, even if it finished before the unwind reached the main thread)."""
    global _unwinding
    if threading.current_thread() is threading.main_thread():
        _unwinding = False
    return _stopping.is_set()


def _unwind(signum: int, frame: object) -> None:
    if _unwinding:
        raise KeyboardInterrupt


def _noted(signum: int, frame: object) -> None:
    """The interpreter-level handler: the signal is already in the pipe; nothing else to do here."""


def _watch(read_fd: int, main_ident: int | None) -> None:
    seen = 0
    while True:
        try:
            data = os.read(read_fd, 64)
        except InterruptedError:
            continue
        if not data:
            return
        for signum in data:
            if signum not in STOP_SIGNALS:
                continue  # (our own unwinding signal passes through the pipe too)
            seen += 1
            _stopping.set()
            if seen == 1:
                threading.Thread(target=_stop_gently, args=(main_ident,), name="mimo-stop", daemon=True).start()
            elif seen == 2:
                _stop_now()


def _stop_gently(main_ident: int | None) -> None:
    from mimo_core.run.batch import cancel_all

    cancel_all()
    if main_ident is not None:
        signal.pthread_kill(main_ident, _UNWIND)


def _stop_now() -> NoReturn:
    """Kill and remove every sandbox now, give the rollouts a moment, exit 130 by the deadline."""
    worker = threading.Thread(target=_stop_sandboxes, name="mimo-stop-now", daemon=True)
    worker.start()
    worker.join(STOP_NOW_DEADLINE_S)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(130)


def _stop_sandboxes() -> None:
    from mimo_core.environments.live import stop_all
    from mimo_core.environments.local.cleanup import remove_process_scratch
    from mimo_core.run.batch import cancel_all

    print("\nmimoagent: stopping now (second signal); rerun the command to resume", file=sys.stderr, flush=True)
    cancel_all()  # in case the second signal came before the first one's handling set it
    stop_all()
    deadline = time.monotonic() + STOP_NOW_GRACE_S
    for t in threading.enumerate():
        if t.name.startswith("rollout"):
            t.join(max(deadline - time.monotonic(), 0))
    stop_all()  # a sandbox a rollout started during the grace period
    remove_process_scratch()  # (the exit below skips the atexit hook that would)
