"""A container's forced removal.

`stop()` removes a rollout's container; `environments.live` (where every live sandbox is tracked) stops
whatever an abandoned worker thread still held at exit. A SIGKILLed runner runs nothing, so each container
also carries the runner's host and pid (`owners.py`): `docker.cleanup.cleanup(stale_only=True)` removes
those of dead runners.
"""

from __future__ import annotations

import time
from typing import Any


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
