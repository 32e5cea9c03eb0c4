"""The ATIF (Harbor's Agent Trajectory Interchange Format, RFC 0001) objects this export writes.

Written from the specification's documented fields (not copied from Harbor): only what a mimoagent
trajectory can fill. Unknown fields are refused, as ATIF consumers refuse them; the test validates the
written files against Harbor's own pydantic model from its PyPI package.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ATIF_VERSION = "ATIF-v1.6"


class _Atif(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AtifAgent(_Atif):
    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None  # OpenAI function-calling format
    extra: dict[str, Any] | None = None


class AtifToolCall(_Atif):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = None


class AtifObservationResult(_Atif):
    source_call_id: str | None = None  # the tool_call_id it answers, in the same step
    content: str | None = None
    extra: dict[str, Any] | None = None


class AtifObservation(_Atif):
    results: list[AtifObservationResult]


class AtifMetrics(_Atif):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


class AtifStep(_Atif):
    step_id: int = Field(ge=1)  # 1, 2, 3, ... in order
    source: Literal["system", "user", "agent"]
    message: str
    model_name: str | None = None  # agent steps only (as reasoning_content, tool_calls, metrics)
    reasoning_content: str | None = None
    tool_calls: list[AtifToolCall] | None = None
    observation: AtifObservation | None = None
    metrics: AtifMetrics | None = None
    extra: dict[str, Any] | None = None


class AtifFinalMetrics(_Atif):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None


class AtifTrajectory(_Atif):
    schema_version: str = ATIF_VERSION
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: AtifAgent
    steps: list[AtifStep] = Field(min_length=1)
    notes: str | None = None
    final_metrics: AtifFinalMetrics | None = None
    extra: dict[str, Any] | None = None
