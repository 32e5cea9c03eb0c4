"""The versioned training schema written as traj.json (documented in docs/trajectory.md).

In memory a trajectory holds typed `Message`s and `ToolSchema`s; on disk they are in OpenAI chat format,
which is what trainers read. `read_trajectory` loads every version this code has written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, field_serializer, field_validator

from mimo_core.containment.events import ContainmentEvent
from mimo_core.models.base import CallRecord, Usage
from mimo_core.models.messages import Message, ToolSchema
from mimo_core.status import ExitStatus

if TYPE_CHECKING:
    from mimo_core.agents.base import AgentResult
    from mimo_core.datasets.base import Task

# 1.1: `exit_status` is the rollout's status, the same value as its results.jsonl line (1.0 wrote the
# agent's own status there even when grading then failed); the agent's own status is `agent_exit_status`.
# 1.2: `containment_events`, what the agent tried that the sandbox refused or that reached for the grade.
# 1.3: waits for the endpoint's budget (`calls[].wait_s`, `timings.budget_wait_s`), `usage.cache_write_tokens`.
SCHEMA_VERSION = "1.3"


class ModelInfo(BaseModel):
    name: str
    protocol: str
    endpoint_host: str | None = None  # host only: never the key, never the full URL with credentials


class Timings(BaseModel):
    started_at: str  # ISO-8601 UTC
    ended_at: str | None = None
    env_setup_s: float = 0.0
    agent_s: float = 0.0
    grading_s: float = 0.0
    total_s: float = 0.0
    budget_wait_s: float = 0.0  # the agent's model calls waited this long for their endpoint's budget


class Trajectory(BaseModel):
    schema_version: str = SCHEMA_VERSION
    framework_version: str
    run_id: str
    instance_id: str
    dataset_type: str
    config_name: str
    rollout_index: int
    agent_type: str
    model: ModelInfo | None = None
    tools: list[ToolSchema] = Field(default_factory=list)  # on disk: OpenAI function format, as sent
    messages: list[Message] = Field(default_factory=list)  # on disk: OpenAI chat format
    calls: list[CallRecord] = Field(default_factory=list)
    exit_status: ExitStatus  # the rollout's status: the same value as its results.jsonl line
    agent_exit_status: ExitStatus | None = None  # how the agent itself ended (before grading)
    error: str | None = None
    submission: str | None = None
    steps: int = 0
    usage: Usage = Field(default_factory=Usage)
    cost: float = 0.0
    timings: Timings
    config: dict[str, Any] = Field(default_factory=dict)  # redacted
    containment_events: list[ContainmentEvent] = Field(default_factory=list)  # docs/trajectory.md

    @field_validator("messages", mode="before")
    @classmethod
    def _messages_from_disk(cls, value: Any) -> Any:
        return [Message.from_openai(m) if isinstance(m, dict) else m for m in value]

    @field_validator("tools", mode="before")
    @classmethod
    def _tools_from_disk(cls, value: Any) -> Any:
        return [ToolSchema.from_openai(t) if isinstance(t, dict) else t for t in value]

    @field_serializer("messages")
    def _messages_to_disk(self, value: list[Message]) -> list[dict[str, Any]]:
        return [m.to_openai() for m in value]

    @field_serializer("tools")
    def _tools_to_disk(self, value: list[ToolSchema]) -> list[dict[str, Any]]:
        return [t.to_openai() for t in value]

    @classmethod
    def for_rollout(
        cls,
        *,
        task: Task,
        run_id: str,
        config_name: str,
        rollout_index: int,
        agent_type: str,
        model: ModelInfo | None,
        agent: AgentResult | None,
        exit_status: ExitStatus,
        error: str | None,
        submission: str | None,
        timings: Timings,
        config: dict[str, Any],
        containment_events: list[ContainmentEvent] | None = None,
    ) -> Trajectory:
        """The one way a trajectory is built, for the agent's rollout and for the judge alike.
        `exit_status`/`error` are the rollout's outcome; `agent` is None when no agent got to run;
        `config` must already be redacted."""
        from mimo_core.version import __version__

        ran = (
            {}
            if agent is None
            else {
                "tools": agent.tools,
                "messages": agent.messages,
                "calls": agent.calls,
                "steps": agent.steps,
                "usage": agent.usage,
                "cost": agent.cost,
                "agent_exit_status": agent.exit_status,
            }
        )
        return cls(
            framework_version=__version__,
            run_id=run_id,
            instance_id=task.instance_id,
            dataset_type=task.dataset_type,
            config_name=config_name,
            rollout_index=rollout_index,
            agent_type=agent_type,
            model=model,
            exit_status=exit_status,
            error=error,
            submission=submission,
            timings=timings,
            config=config,
            containment_events=containment_events or [],
            **ran,
        )


def _upgrade(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """Bring an older traj.json up to the current schema, or say which version is not understood."""
    version = data.get("schema_version")
    if version is None and data.get("agent_type") == "judge":
        data = _upgrade_unversioned_judge(data, path)
        version = "1.0"
    if version == "1.0":
        data = {**data, "schema_version": "1.1", "agent_exit_status": data.get("exit_status")}
        version = "1.1"
    if version == "1.1":  # no containment events were recorded then
        data = {**data, "schema_version": "1.2"}
        version = "1.2"
    if version == "1.2":  # no budget waits or cache writes were recorded then: 0
        data = {**data, "schema_version": SCHEMA_VERSION}
        version = SCHEMA_VERSION
    if version != SCHEMA_VERSION:
        raise ValueError(
            f"{path}: unknown trajectory schema_version {version!r} (this code reads 1.0 to {SCHEMA_VERSION})"
        )
    return data


def _upgrade_unversioned_judge(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """Before the judge shared the schema, judge/traj.json held the loop's record only; the rollout it
    belongs to (the parent folder's traj.json) supplies who, where and when."""
    parent: dict[str, Any] = {}
    try:
        parent = json.loads((path.parent.parent / "traj.json").read_text())
    except (OSError, ValueError):
        pass
    rollout = path.parent.parent
    return {
        **data,
        "schema_version": "1.0",
        "model": {"name": data.get("model") or "", "protocol": "unknown"},
        "framework_version": parent.get("framework_version", "unknown"),
        "run_id": parent.get("run_id", ""),
        "instance_id": parent.get("instance_id", rollout.parent.parent.name),
        "dataset_type": parent.get("dataset_type", "unknown"),
        "config_name": parent.get("config_name", rollout.parent.name),
        "rollout_index": parent.get("rollout_index", int(rollout.name) if rollout.name.isdigit() else 0),
        "timings": parent.get("timings", {"started_at": ""}),
    }


def read_trajectory(path: str | Path) -> Trajectory:
    """Load a traj.json written by any version of mimoagent (raises ValueError naming the file)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read a trajectory: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a trajectory is a JSON object, got {type(data).__name__}")
    data = _upgrade(data, path)
    try:
        return Trajectory.model_validate(data)
    except ValueError as e:
        raise ValueError(f"{path}: not a valid trajectory: {e}") from None
