"""The verdict every dataset type's `grade` returns. It lives with grading so `grading` needs nothing
from `datasets` (datasets depend on grading, never the other way round)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Grade(BaseModel):
    """The verifier's verdict. `infra_error` set means the grading path broke: not a failed solution."""

    reward: float | None = None
    passed: bool = False
    details: dict[str, Any] = Field(default_factory=dict)  # becomes reward_extra_info.json
    infra_error: str | None = None
