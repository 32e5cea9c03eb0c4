"""A full disk stops the run: no new rollout starts, nothing finished is lost.

A write that fails for lack of space (ENOSPC, EDQUOT) anywhere in a rollout raises DiskFull instead of
becoming that rollout's record: the rollout is left unfinished (redone by the next run), the batch stops
like a Ctrl-C, and the CLI says what happened in one line. Records already written stay valid; a line
torn by the failed append is moved aside by the next run (ResultsStore.repair).
"""

from __future__ import annotations

import errno

from mimo_core.errors import MimoError

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
    return DiskFull(f"no space left on the device{f' writing {path}' if path else ''} ({where}): stopped "
                    "starting rollouts; finished ones are kept, free some space and rerun the command to resume")
