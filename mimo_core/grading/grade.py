"""The verdict every dataset type's `grade` returns. It lives with grading so `grading` needs nothing
from `datasets` (datasets depend on grading, never the other way round)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from mimo_core.containment.events import Kind


class Finding(BaseModel):
    """Something grading found that the agent did to its grade: recorded as a containment event of
    `kind`. `zeroes`: the verdict itself is void (reward 0 whatever `grading.tamper` says)."""

    kind: Kind
    detail: str
    zeroes: bool = False


class Grade(BaseModel):
    """The verifier's verdict. `infra_error` set means the grading path broke: not a failed solution."""

    reward: float | None = None
    passed: bool = False
    details: dict[str, Any] = Field(default_factory=dict)  # becomes reward_extra_info.json
    infra_error: str | None = None
    findings: list[Finding] = Field(default_factory=list)  # recorded as containment events by the rollout
    # A host folder holding a copy of what the verifier wrote (its logs folder, its full output); the
    # rollout moves it to `verifier/` in the rollout folder. Not part of any record.
    evidence_dir: str | None = Field(default=None, exclude=True)
