"""A full disk stops the run: no new rollout starts, nothing finished is lost.

A write that fails for lack of space (ENOSPC, EDQUOT) anywhere in a rollout raises DiskFull instead of
becoming that rollout's record: the rollout is left unfinished (redone by the next run), the batch stops
like a Ctrl-C, and the CLI says what happened in one line. Records already written stay valid; a line
torn by the failed append is moved aside by the next run (ResultsStore.repair).
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

from mimo_core.errors import MimoError

if TYPE_CHECKING:
    from mimo_core.run.job import RolloutJob

_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


class DiskFull(MimoError):
    """No space left where mimoagent writes (the output folder or the sandboxes' root)."""


def is_disk_full(exc: BaseException | None) -> bool:
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, OSError) and exc.errno in _NO_SPACE:
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def disk_full(exc: BaseException, where: str) -> DiskFull:
    path = getattr(exc, "filename", None)
    return DiskFull(
        f"no space left on the device{f' writing {path}' if path else ''} ({where}): stopped "
        "starting rollouts; finished ones are kept, free some space and rerun the command to resume"
    )


def low_water(job: RolloutJob) -> DiskFull | None:
    """DiskFull when the free space where this rollout would write (the run's output folder, the local
    sandboxes' root) is below its config's `environment.host_min_free_mb`: the run stops starting
    rollouts before a neighbour's filling takes the disk, and says so. None while there is room."""
    import os
    import shutil
    import tempfile

    env = job.config.config.environment
    floor = env.host_min_free_mb << 20
    if not floor:
        return None
    places = [str(job.output_dir)]
    if env.environment_class == "local":
        places.append(str(env.backend_kwargs.get("root") or tempfile.gettempdir()))
    for place in places:
        path = os.path.abspath(place)
        while not os.path.exists(path) and os.path.dirname(path) != path:
            path = os.path.dirname(path)
        try:
            free = shutil.disk_usage(path).free
        except OSError:
            continue
        if free < floor:
            return DiskFull(
                f"the host's free space at {place} is {free >> 20} MB, below the low-water mark "
                f"(environment.host_min_free_mb: {env.host_min_free_mb}): stopped starting rollouts; "
                "finished ones are kept, free some space and rerun the command to resume"
            )
    return None
