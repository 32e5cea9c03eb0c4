"""Request validation as strict servers do it, for the scripted server's `strict=True` mode.

The spec's loosest reading is not what every server accepts. llama-cpp-python's request models require
`content` to be a string (an assistant turn with tool calls and `content: null` fails every later
request with HTTP 500); Anthropic rejects empty text blocks, unanswered tool_use blocks and turns that do
not alternate; the Responses API wants string arguments and outputs. These pydantic models follow those
rules, so a test against the strict scripted server fails where a real strict server would.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError


class _Forbid(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Allow(BaseModel):
    model_config = ConfigDict(extra="allow")


# -- Chat Completions (llama-cpp-python's CreateChatCompletionRequest messages) --------------------------
class _Function(_Forbid):
    name: StrictStr
    arguments: StrictStr


class _ToolCall(_Forbid):
    id: StrictStr
    type: Literal["function"]
    function: _Function


class _TextPart(_Forbid):
    type: Literal["text"]
    text: StrictStr


class ChatSystemMessage(_Forbid):
    role: Literal["system", "developer"]
    content: StrictStr | list[_TextPart]
    name: StrictStr | None = None


class ChatUserMessage(_Forbid):
    role: Literal["user"]
    content: StrictStr | list[dict[str, Any]]
    name: StrictStr | None = None


class ChatAssistantMessage(_Forbid):
    role: Literal["assistant"]
    content: StrictStr = ""  # may be absent; if present it must be a string (null is rejected)
    tool_calls: list[_ToolCall] | None = Field(default=None, min_length=1)
    name: StrictStr | None = None


class ChatToolMessage(_Forbid):
    role: Literal["tool"]
    content: StrictStr
    tool_call_id: StrictStr


class _ChatTool(_Forbid):
    type: Literal["function"]
    function: dict[str, Any]


class CreateChatCompletionRequest(_Allow):
    model: StrictStr
    messages: list[ChatSystemMessage | ChatUserMessage | ChatAssistantMessage | ChatToolMessage] = Field(min_length=1)
    tools: list[_ChatTool] | None = None


# -- Responses --------------------------------------------------------------------------------------------
class _RespMessage(_Forbid):
    role: Literal["system", "developer", "user", "assistant"]
    content: StrictStr | list[dict[str, Any]]
    type: Literal["message"] | None = None


class _RespFunctionCall(_Forbid):
    type: Literal["function_call"]
    call_id: StrictStr
    name: StrictStr
    arguments: StrictStr
    id: StrictStr | None = None
    status: StrictStr | None = None


class _RespFunctionOutput(_Forbid):
    type: Literal["function_call_output"]
    call_id: StrictStr
    output: StrictStr


class _RespReasoning(_Allow):
    type: Literal["reasoning"]
    id: StrictStr
    summary: list[dict[str, Any]]


class _RespTool(_Forbid):
    type: Literal["function"]
    name: StrictStr
    description: StrictStr | None = None
    parameters: dict[str, Any]
    strict: bool | None = None


class CreateResponseRequest(_Allow):
    model: StrictStr
    input: StrictStr | list[_RespMessage | _RespFunctionCall | _RespFunctionOutput | _RespReasoning]
    tools: list[_RespTool] | None = None


# -- Anthropic Messages -----------------------------------------------------------------------------------
class _Text(_Forbid):
    type: Literal["text"]
    text: StrictStr = Field(min_length=1)  # "text content blocks must be non-empty"


class _ToolUse(_Forbid):
    type: Literal["tool_use"]
    id: StrictStr
    name: StrictStr
    input: dict[str, Any]


class _ToolResult(_Forbid):
    type: Literal["tool_result"]
    tool_use_id: StrictStr
    content: StrictStr | list[_Text]
    is_error: bool | None = None


class _Thinking(_Forbid):
    type: Literal["thinking"]
    thinking: StrictStr
    signature: StrictStr


class _RedactedThinking(_Forbid):
    type: Literal["redacted_thinking"]
    data: StrictStr


class _AnthropicMessage(_Forbid):
    role: Literal["user", "assistant"]
    content: StrictStr | list[_Text | _ToolUse | _ToolResult | _Thinking | _RedactedThinking] = Field(min_length=1)


class _AnthropicTool(_Forbid):
    name: StrictStr
    description: StrictStr | None = None
    input_schema: dict[str, Any]


class CreateMessageRequest(_Allow):
    model: StrictStr
    max_tokens: int = Field(ge=1)
    messages: list[_AnthropicMessage] = Field(min_length=1)
    system: StrictStr | list[_Text] | None = None
    tools: list[_AnthropicTool] | None = None


def _anthropic_turns(req: CreateMessageRequest) -> str | None:
    """What pydantic cannot say: roles alternate from a user turn, every tool_use is answered next turn."""
    roles = [m.role for m in req.messages]
    if roles[0] != "user":
        return "messages: the first message must use the user role"
    for i in range(1, len(roles)):
        if roles[i] == roles[i - 1]:
            return f"messages.{i}: roles must alternate between user and assistant"
    for i, m in enumerate(req.messages):
        if m.role != "assistant" or isinstance(m.content, str):
            continue
        asked = {b.id for b in m.content if isinstance(b, _ToolUse)}
        if not asked:
            continue
        nxt = req.messages[i + 1] if i + 1 < len(req.messages) else None
        answered = (
            set()
            if nxt is None or isinstance(nxt.content, str)
            else {b.tool_use_id for b in nxt.content if isinstance(b, _ToolResult)}
        )
        if nxt is not None and asked - answered:
            return (
                f"messages.{i + 1}: tool_use ids were found without tool_result blocks immediately after: "
                f"{sorted(asked - answered)}"
            )
    return None


_MODELS: dict[str, type[BaseModel]] = {
    "chat": CreateChatCompletionRequest,
    "responses": CreateResponseRequest,
    "anthropic": CreateMessageRequest,
}


def validation_error(protocol: str, body: dict[str, Any]) -> str | None:
    """None if `body` passes the strict server's checks, else its message (pydantic's wording)."""
    model = _MODELS.get(protocol)
    if model is None:
        return None
    try:
        req = model.model_validate(body)
    except ValidationError as e:
        return str(e)
    if isinstance(req, CreateMessageRequest):
        return _anthropic_turns(req)
    if protocol == "chat":
        return _chat_arguments(body)
    return None


def _chat_arguments(body: dict[str, Any]) -> str | None:
    """llama.cpp (and vLLM, for its chat template) parse every earlier tool call's arguments as strict JSON;
    llama.cpp answers a failure with HTTP 500 "Failed to parse tool call arguments as JSON"."""
    for m in body.get("messages") or ():
        for c in m.get("tool_calls") or ():
            try:
                json.loads(c["function"]["arguments"])
            except json.JSONDecodeError as e:
                return f"Failed to parse tool call arguments as JSON: {e}"
    return None


def strict_error_reply(protocol: str, message: str) -> tuple[int, dict[str, Any]]:
    """(status, body) as each kind of strict server answers a request it rejects: llama-cpp-python's
    route handler turns the validation error into an HTTP 500; the hosted APIs say 400."""
    if protocol == "chat":
        return 500, {"error": {"message": message, "type": "internal_server_error", "param": None, "code": None}}
    if protocol == "anthropic":
        return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return 400, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
