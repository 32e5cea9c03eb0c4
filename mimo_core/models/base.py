"""The Model seam: `query(messages, tools) -> ModelResponse`. Protocol differences stay in each module."""

from __future__ import annotations

import threading
from typing import Any, Protocol

from pydantic import BaseModel, Field

from mimo_core.models.messages import Message, ToolSchema


class Usage(BaseModel):
    """Tokens of one call or a sum of them, alike for every protocol (docs/models.md, "Costs"): the prompt
    counts every input token, cached (read from the provider's cache) and cache-written ones included; the
    completion counts every output token, reasoning ones included."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, read from the provider's cache
    reasoning_tokens: int = 0  # of completion_tokens, the model's reasoning
    cache_write_tokens: int = 0  # of prompt_tokens, written to the provider's cache (Anthropic's cache creation)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})


class CallRecord(BaseModel):
    """One model call, summarised, as traj.json keeps it; the full request and response are in
    agent_msgs/steps.jsonl."""

    step: int
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    cost: float = 0.0
    attempts: int = 1
    finish_reason: str | None = None
    token_ids: list[int] | None = None
    prompt_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    wait_s: float = 0.0  # waited for the endpoint's budget before its attempts (not in latency_s)


class ModelResponse(BaseModel):
    """One model call: the assistant message plus everything a trainer or an accountant needs."""

    message: Message
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    cost: float = 0.0
    attempts: int = 1  # 1 + number of retries
    wait_s: float = 0.0  # waited for the endpoint's budget (models/endpoint_budget.py); not in latency_s
    finish_reason: str | None = None
    token_ids: list[int] | None = None  # completion token ids when the endpoint returns them
    prompt_token_ids: list[int] | None = None
    logprobs: list[float] | None = None  # per completion token
    request: dict[str, Any] = Field(default_factory=dict)  # exact request body sent (no credentials)
    request_json: str | None = Field(default=None, exclude=True)  # the same body as sent, already encoded
    response: dict[str, Any] = Field(default_factory=dict)  # raw response body


class Model(Protocol):
    """What the agent needs from a model endpoint."""

    name: str
    protocol: str

    def query(
        self, messages: list[Message], tools: list[ToolSchema], cancel: threading.Event | None = None
    ) -> ModelResponse:
        """`cancel` set (Ctrl-C / SIGTERM) ends a call in flight with ModelInterrupted."""
        ...
