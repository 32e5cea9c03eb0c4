"""Byte budgets on what the runner reads of agent-made data (the `limits:` config block).

Anything the agent or the code under test writes (a file the read tool is asked for, the patch a
collect hook leaves, a CLI agent's log, the verifier's logs) is read at most this many bytes, before it
is decoded: the runner's memory does not grow with what a rollout produces. What was cut is said where
it was cut (the tool result the model sees, the grade's details). docs/sandboxes.md has the table.

The rollout makes its config's limits current for its thread (`use_limits`, in `rollout.run_one`), so
code far from the config (the verifier's evidence copy) reads them with `current_limits()`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pydantic import ConfigDict, Field

from mimo_core.base.strict_model import NumbersAreNumbers

MiB = 1 << 20


class LimitsConfig(NumbersAreNumbers):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    # the read and edit tools (the agent's and the judge's): bytes of one file read; a longer file shows
    # its first part and says so, an edit of one is refused
    max_read_bytes: int = Field(2 * MiB, gt=0, le=1 << 30)
    # what is collected from the sandbox as a whole: the patch a collect hook wrote, a CLI agent's logs
    max_artifact_bytes: int = Field(16 * MiB, gt=0, le=1 << 31)
    # the verifier's logs folder kept as evidence: per file (a larger one keeps its first part) and in all
    max_evidence_file_bytes: int = Field(8 * MiB, gt=0, le=1 << 31)
    max_evidence_bytes: int = Field(32 * MiB, gt=0, le=1 << 32)


_current: ContextVar[LimitsConfig | None] = ContextVar("mimo_limits", default=None)


def current_limits() -> LimitsConfig:
    """The limits of the rollout running in this thread (the defaults outside a rollout)."""
    return _current.get() or LimitsConfig()


def set_limits(limits: LimitsConfig | None) -> None:
    """Make `limits` this thread's current ones (each rollout sets its own at its start)."""
    _current.set(limits)


@contextmanager
def use_limits(limits: LimitsConfig | None) -> Iterator[None]:
    token = _current.set(limits)
    try:
        yield
    finally:
        _current.reset(token)


def truncation_note(size: int | None, shown: int) -> str:
    """The note a cut read carries: `[truncated: file is N bytes, showed M]`."""
    whole = f"file is {size} bytes" if size is not None else "file is longer (not a regular file)"
    return f"[truncated: {whole}, showed {shown}]"
