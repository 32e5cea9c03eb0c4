"""Who owns a container or pod: labels with the runner's host and pid, so the sweep at the start of a
run (and `mimoagent cleanup --stale-only`) removes only what dead runners of this host left behind."""

from __future__ import annotations

import os
import socket

LABEL_PID = "mimoagent.pid"
LABEL_HOST = "mimoagent.host"


def owner_labels() -> dict[str, str]:
    return {LABEL_PID: str(os.getpid()), LABEL_HOST: socket.gethostname()}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_stale(labels: dict[str, str], host: str | None = None) -> bool:
    """Made on this host by a runner pid that no longer exists (other hosts' are left alone)."""
    host = host or socket.gethostname()
    if labels.get(LABEL_HOST) != host:
        return False
    try:
        pid = int(labels.get(LABEL_PID, ""))
    except ValueError:
        return False
    return pid != os.getpid() and not _pid_alive(pid)
