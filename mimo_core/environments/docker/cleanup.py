"""Remove leftover mimoagent containers: all of them, one run's, or only those of dead runners.

`mimoagent cleanup` calls `cleanup()`; each docker run calls `cleanup(stale_only=True)` at start, so
a rerun after a SIGKILL leaves nothing of the killed run behind. "Stale" means: made on this host by
a runner pid that no longer exists (containers of other hosts sharing the engine are left alone).
"""

from __future__ import annotations

import os
from typing import Any

from mimo_core.environments.base import LABEL_RUN_ID
from mimo_core.environments.docker.registry import remove
from mimo_core.environments.owners import LABEL_HOST, LABEL_PID, is_stale
from mimo_core.errors import SandboxError


def cleanup(
    run_id: str | None = None, stale_only: bool = False, client: Any = None, live: list[str] | None = None
) -> int:
    """Remove mimoagent containers (optionally of one run, optionally only stale ones); return how many.
    With `stale_only`, each one left alone because its runner may live is described in `live`."""
    import docker

    own = client is None
    if client is None:
        try:
            client = docker.from_env(version="auto")
        except docker.errors.DockerException as e:
            where = os.environ.get("DOCKER_HOST", "the default socket")
            raise SandboxError(f"cannot reach the Docker engine at {where}: {e}") from None
    try:
        label = f"{LABEL_RUN_ID}={run_id}" if run_id else LABEL_RUN_ID
        removed = 0
        for c in client.api.containers(all=True, filters={"label": label}):
            labels = c.get("Labels") or {}
            if stale_only and not is_stale(labels):
                if live is not None:
                    live.append(
                        f"container {c['Id'][:12]} (run {labels.get(LABEL_RUN_ID, '?')}, "
                        f"pid {labels.get(LABEL_PID, '?')} on {labels.get(LABEL_HOST, '?')})"
                    )
                continue
            remove(c["Id"], client)
            removed += 1
        return removed
    finally:
        if own:
            client.close()
