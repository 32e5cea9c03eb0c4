"""The versioned training schema written as traj.json (documented in docs/trajectory.md)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from mimo_core.models.base import Usage

SCHEMA_VERSION = "1.0"


class ModelInfo(BaseModel):
    name: str
    protocol: str
    endpoint_host: str | None = None  # host only: never the key, never the full URL with credentials


class CallRecord(BaseModel):
    """One model call, summarised; the full request/response is in agent_msgs/<step>.json."""

    step: int
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    cost: float = 0.0
    attempts: int = 1
    finish_reason: str | None = None
    token_ids: list[int] | None = None
    prompt_token_ids: list[int] | None = None
    logprobs: list[float] | None = None


class Timings(BaseModel):
    started_at: str  # ISO-8601 UTC
    ended_at: str | None = None
    env_setup_s: float = 0.0
    agent_s: float = 0.0
    grading_s: float = 0.0
    total_s: float = 0.0


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
    tools: list[dict[str, Any]] = Field(default_factory=list)  # tool schemas as sent (OpenAI function format)
    messages: list[dict[str, Any]] = Field(default_factory=list)  # OpenAI chat format
    calls: list[CallRecord] = Field(default_factory=list)
    exit_status: str
    error: str | None = None
    submission: str | None = None
    steps: int = 0
    usage: Usage = Field(default_factory=Usage)
    cost: float = 0.0
    timings: Timings
    config: dict[str, Any] = Field(default_factory=dict)  # redacted
