"""The conversation types every model protocol converts to and from.

Messages are kept in OpenAI chat shape (role, content, tool_calls, tool_call_id) because that is what
trainers consume; protocol-specific pieces that must be sent back verbatim (Anthropic thinking blocks with
their signatures, Responses reasoning items) ride along in `provider_items`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, cast

from pydantic import BaseModel, Field, PrivateAttr


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: str  # raw JSON text as the model produced it; parsing errors are the agent's business


class Message(BaseModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None  # readable reasoning/thinking text, if the protocol exposes it
    provider_items: list[dict[str, Any]] | None = None  # opaque items to send back to the same protocol
    # A protocol's wire form of this message, built once: messages don't change after they are appended,
    # and re-converting the whole history every step would make a rollout quadratic.
    _wire: Any = PrivateAttr(default=None)
    _wire_key: tuple[str, int] | None = PrivateAttr(default=None)  # (protocol, id): a copy never reuses it

    def wire(self, protocol: str, convert: Callable[[Message], Any]) -> Any:
        # The private dict directly: pydantic's attribute path for private fields costs ~4 µs a read.
        private = cast(dict[str, Any], self.__pydantic_private__)  # never None: the model has private fields
        key = (protocol, id(self))
        if private["_wire_key"] != key:
            private["_wire"], private["_wire_key"] = convert(self), key
        return private["_wire"]

    def to_openai(self, wire: bool = False) -> dict[str, Any]:
        """OpenAI chat-format dict, as written to traj.json. `wire=True` gives what a Chat Completions
        request carries: no reasoning or provider items (servers reject them), no name on tool results."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None and not (wire and self.role == "tool"):
            out["name"] = self.name
        if wire:
            return out
        if self.reasoning is not None:
            out["reasoning_content"] = self.reasoning
        if self.provider_items:
            out["provider_items"] = self.provider_items
        return out

    @classmethod
    def from_openai(cls, data: dict[str, Any]) -> Message:
        """The inverse of `to_openai()`: a message as traj.json stores it."""
        calls = [
            ToolCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
            for c in data.get("tool_calls") or []
        ]
        return cls(
            role=data["role"],
            content=data.get("content"),
            tool_calls=calls or None,
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            reasoning=data.get("reasoning_content"),
            provider_items=data.get("provider_items"),
        )


class ToolSchema(BaseModel):
    """A tool as offered to the model; each protocol module renders it in its own wire format."""

    name: str
    description: str
    parameters: dict[str, Any] = Field(default_factory=dict)  # JSON schema of the arguments

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    @classmethod
    def from_openai(cls, data: dict[str, Any]) -> ToolSchema:
        """The inverse of `to_openai()`: a tool as traj.json stores it."""
        return cls.model_validate(data.get("function", data))
