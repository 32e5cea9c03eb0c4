"""The DatasetType seam: a row schema, how to set up a sandbox from a row, how to grade it in place."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from mimo_core.base.strict_model import NumbersAreNumbers
from mimo_core.base.values import TaskCwd
from mimo_core.environments.base import Environment, SandboxSpec
from mimo_core.grading.grade import Grade

# Control characters, line and paragraph separators, lone surrogates: nothing an id may hold.
_UNPRINTABLE = frozenset({"Cc", "Zl", "Zp", "Cs"})


class Rubric(BaseModel):
    rubrics: list[str | dict[str, Any]] = Field(default_factory=list)


class Task(NumbersAreNumbers):
    """One validated dataset row. Type-specific fields live on subclasses in each dataset-type module;
    unknown fields are kept (and are available to templates) rather than dropped."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, allow_inf_nan=False)

    instance_id: str = Field(validation_alias=AliasChoices("instance_id", "id", "task_id"))
    dataset_type: str = "generic"
    problem_statement: str = Field(validation_alias=AliasChoices("problem_statement", "instruction", "prompt", "task"))
    image: str | None = None
    cwd: TaskCwd | None = None
    env: dict[str, str] = Field(default_factory=dict)
    rubric: Rubric | None = None
    # Filled by the loader: the file the row came from, for resolving relative paths
    source: str | None = Field(default=None, exclude=True)

    @field_validator("instance_id")
    @classmethod
    def _printable_id(cls, v: str) -> str:
        """An id names folders, partitions and log lines: it must show as what it is."""
        if not v.strip():
            raise ValueError("the instance id is empty or blank")
        bad = next((c for c in v if unicodedata.category(c) in _UNPRINTABLE), None)
        if bad is not None:
            raise ValueError(f"the instance id holds the control character {bad!r} (U+{ord(bad):04X})")
        return v

    def template_vars(self) -> dict[str, Any]:
        """Fields a jinja template may use: every row field, plus `task` = the problem statement."""
        data = self.model_dump(mode="json")
        data["task"] = self.problem_statement
        return data


EnvFactory = Callable[[SandboxSpec], Environment]  # starts a fresh sandbox (e.g. a separate verifier)


class DatasetType(Protocol):
    name: ClassVar[str]
    row_model: ClassVar[type[Task]]

    def sandbox_spec(self, task: Task, cwd: str | None, timeout: float, use_dataset_env: bool) -> SandboxSpec: ...

    def setup(self, env: Environment, task: Task) -> None:
        """Bring a started sandbox to the task's initial state."""
        ...

    def collect_submission(self, env: Environment, task: Task) -> str:
        """The agent's result, usually the diff of the working tree against the task's base."""
        ...

    def gold_submission(self, task: Task) -> str | None:
        """The reference solution, for `--recalc-input gt` and the oracle agent."""
        ...

    def apply_gold(self, env: Environment, task: Task) -> tuple[bool, str]:
        """Put the reference solution in place (gold patch or solution script). Returns (applied, log)."""
        ...

    def apply_submission(self, env: Environment, task: Task, submission: str) -> tuple[bool, str]:
        """Put a saved submission into a fresh sandbox (recalc). Returns (applied, log)."""
        ...

    def prepare_grading(self, env: Environment, task: Task) -> list[str]:
        """Once the agent's processes are gone: the verifier's folders made anew (what the agent had put
        there is removed and returned, for the record)."""
        ...

    def grade(self, env: Environment, task: Task, submission: str, new_env: EnvFactory) -> Grade: ...
