"""The Model seam: `query(messages, tools) -> ModelResponse`. Protocol differences stay in each module."""

from __future__ import annotations

import threading
from typing import Any, Protocol

from pydantic import BaseModel, Field

from mimo_core.models.messages import Message, ToolSchema


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


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


class ModelResponse(BaseModel):
    """One model call: the assistant message plus everything a trainer or an accountant needs."""

    message: Message
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    cost: float = 0.0
    attempts: int = 1  # 1 + number of retries
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
