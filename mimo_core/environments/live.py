"""The sandboxes this process holds (local and docker), so a stopping runner can end their commands from
any thread.

`interrupt_all()` kills every process of every live sandbox at once (a command sleeping for a minute
returns at once, as killed); the rollouts then unwind through their own `stop()`. The atexit hook stops
whatever an abandoned worker thread still held, so a normal exit leaves no folder or process behind.
"""

from __future__ import annotations

import atexit
import threading
from typing import Any

_live: dict[int, Any] = {}  # id(env) -> env
_lock = threading.Lock()
_hooked = False


def track(env: Any) -> None:
    global _hooked
    with _lock:
        _live[id(env)] = env
        if not _hooked:
            atexit.register(stop_all)
            _hooked = True


def untrack(env: Any) -> None:
    with _lock:
        _live.pop(id(env), None)


def _envs() -> list[Any]:
    with _lock:
        return list(_live.values())


def interrupt_all() -> None:
    """Kill the processes of every live sandbox; safe from a signal handler's thread."""
    for env in _envs():
        try:
            env.interrupt()
        except Exception:
            pass


def stop_all() -> None:
    for env in _envs():
        try:
            env.stop()
        except Exception:
            pass
