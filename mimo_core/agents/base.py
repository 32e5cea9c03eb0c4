"""The Agent seam: `run(task, env, ctx) -> AgentResult`. The default agent, the oracle, the judge and the
blackbox CLI adapters all return the same record, so the trajectory writer never cares which ran."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, Field

from mimo_core.datasets.base import Task
from mimo_core.environments.base import Environment
from mimo_core.models.base import CallRecord, Usage
from mimo_core.models.messages import Message, ToolSchema
from mimo_core.status import ExitStatus


class AgentResult(BaseModel):
    exit_status: ExitStatus
    error: str | None = None
    messages: list[Message] = Field(default_factory=list)
    tools: list[ToolSchema] = Field(default_factory=list)
    calls: list[CallRecord] = Field(default_factory=list)
    steps: int = 0
    usage: Usage = Field(default_factory=Usage)
    cost: float = 0.0


class AgentContext(Protocol):
    """What the rollout hands an agent: a log and a place for the per-call training samples."""

    def log(self, text: str) -> None: ...

    def record_call(
        self, step: int, request: dict[str, Any], response: dict[str, Any], request_json: str | None = None
    ) -> None:
        """`request_json`, when given, is `request` already encoded: written as is, not encoded again."""
        ...

    def note_tool_call(self, step: int, tool: str, arguments: str, output: str) -> None:
        """Every tool call the agent ran and its observation (containment detection, mimo_core/containment)."""
        ...


class Agent(Protocol):
    def run(self, task: Task, env: Environment, ctx: AgentContext) -> AgentResult: ...
