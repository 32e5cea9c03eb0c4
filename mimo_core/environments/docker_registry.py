"""The containers this process owns, so none outlives it: `stop()` removes one, atexit removes the rest.

Ctrl-C unwinds each rollout through its `finally: stop()`; the atexit hook catches whatever an
abandoned worker thread still held. A SIGKILLed runner runs nothing, so each container also carries
the runner's host and pid: `docker_cleanup.cleanup(stale_only=True)` removes those of dead runners.
"""

from __future__ import annotations

import atexit
import os
import socket
import threading
import time
from typing import Any

LABEL_PID = "mimoagent.pid"
LABEL_HOST = "mimoagent.host"

_live: dict[int, Any] = {}  # id(env) -> env
_lock = threading.Lock()
_hooked = False


def owner_labels() -> dict[str, str]:
    return {LABEL_PID: str(os.getpid()), LABEL_HOST: socket.gethostname()}


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


def stop_all() -> None:
    with _lock:
        envs = list(_live.values())
    for env in envs:
        try:
            env.stop()
        except Exception:
            pass


def remove(container_id: str, client: Any, attempts: int = 5) -> None:
    """`docker rm -f`, retried: the engine refuses while a removal of the same container is in flight."""
    import docker.errors

    for i in range(attempts):
        try:
            client.api.remove_container(container_id, force=True, v=True)
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as e:
            if "already in progress" in str(e):
                return
            if i == attempts - 1:
                raise
            time.sleep(0.2 * (i + 1))
