"""The Agent seam: `run(task, env, ctx) -> AgentResult`. The default agent, the oracle, the judge and the
blackbox CLI adapters all return the same record, so the trajectory writer never cares which ran."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Protocol

from pydantic import BaseModel, Field

from mimo_core.datasets.base import Task
from mimo_core.environments.base import Environment
from mimo_core.models.base import Usage
from mimo_core.trajectory import CallRecord


class ExitStatus(StrEnum):
    SUBMITTED = "submitted"  # the agent called submit (or the CLI agent exited 0)
    STEP_LIMIT = "step_limit"
    COST_LIMIT = "cost_limit"
    TIME_LIMIT = "time_limit"
    CONTEXT_WINDOW = "context_window"  # the prompt outgrew the model's window
    FORMAT_ERRORS = "format_errors"  # too many consecutive malformed tool calls
    MODEL_ERROR = "model_error"  # endpoint unreachable / kept failing after retries (infra)
    MODEL_AUTH_ERROR = "model_auth_error"  # bad credentials: fix the config, retrying won't help
    MODEL_BAD_REQUEST = "model_bad_request"  # the endpoint rejected the request
    ENVIRONMENT_ERROR = "environment_error"  # the sandbox failed (infra)
    GRADING_ERROR = "grading_error"  # the verifier crashed or wrote no reward (infra)
    AGENT_ERROR = "agent_error"  # a blackbox CLI agent crashed / non-zero exit
    INTERNAL_ERROR = "internal_error"  # a bug in mimoagent (infra)
    CONFIG_ERROR = "config_error"  # the config does not fit this row (e.g. an undefined template variable)
    INTERRUPTED = "interrupted"  # the run was stopped (Ctrl-C) before this rollout finished (infra)
    RECALCULATED = "recalculated"  # no agent ran: a saved or reference submission was graded


# Rollouts that ended with these never count as finished: a rerun (resume) does them again.
INFRA_STATUSES = frozenset(
    {ExitStatus.MODEL_ERROR, ExitStatus.ENVIRONMENT_ERROR, ExitStatus.GRADING_ERROR, ExitStatus.INTERNAL_ERROR,
     ExitStatus.INTERRUPTED, ExitStatus.CONFIG_ERROR}
)


class AgentResult(BaseModel):
    exit_status: ExitStatus
    error: str | None = None
    messages: list[dict[str, Any]] = Field(default_factory=list)  # OpenAI chat format
    tools: list[dict[str, Any]] = Field(default_factory=list)
    calls: list[CallRecord] = Field(default_factory=list)
    steps: int = 0
    usage: Usage = Field(default_factory=Usage)
    cost: float = 0.0
    submission: str | None = None  # set by agents whose result is not the working tree (e.g. a judge)


class AgentContext(Protocol):
    """What the rollout hands an agent: a log and a place for the per-call training samples."""

    def log(self, text: str) -> None: ...

    def record_call(
        self, step: int, request: dict[str, Any], response: dict[str, Any], request_json: str | None = None
    ) -> None:
        """`request_json`, when given, is `request` already encoded: written as is, not encoded again."""
        ...


class Agent(Protocol):
    def run(self, task: Task, env: Environment, ctx: AgentContext) -> AgentResult: ...
