"""`protocol: anthropic` — the Anthropic Messages API through the `anthropic` SDK.

Thinking blocks (with their signatures) and redacted thinking blocks are kept verbatim in
`Message.provider_items` and replayed at the head of the assistant turn: Anthropic rejects a tool-use
turn whose thinking was dropped or altered. Tool results become `tool_result` blocks in a user turn.
"""

from __future__ import annotations

import json
from typing import Any

from mimo_core.config import ModelConfig
from mimo_core.models.base import ModelResponse, Usage
from mimo_core.models.messages import Message, ToolCall, ToolSchema
from mimo_core.models.protocol import ProtocolModel, as_int, split_kwargs
from mimo_core.models.tool_args import arguments_object

DEFAULT_MAX_TOKENS = 4096  # the Messages API requires max_tokens; profiles usually set their own


def _assistant_blocks(m: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = list(m.provider_items or ())
    if m.content:
        blocks.append({"type": "text", "text": m.content})
    for c in m.tool_calls or ():
        blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": arguments_object(c.arguments)})
    return blocks


def _assistant_message(m: Message) -> dict[str, Any]:
    return {"role": "assistant", "content": _assistant_blocks(m)}


def _user_block(m: Message) -> dict[str, Any]:
    if m.role == "tool":
        return {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.content or ""}
    return {"type": "text", "text": m.content or ""}


def messages_to_anthropic(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """(system, messages): system text is lifted out; consecutive user-side turns merge into one."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            system.append(m.content or "")
            continue
        if m.role == "assistant":
            out.append(m.wire("anthropic", _assistant_message))
            continue
        block = m.wire("anthropic", _user_block)  # the same objects every call: cheap to encode and compare
        if out and out[-1]["role"] == "user":
            out[-1]["content"].append(block)
        else:
            out.append({"role": "user", "content": [block]})
    return ("\n\n".join(system) if system else None), out


def tool_to_anthropic(t: ToolSchema) -> dict[str, Any]:
    return {
        "name": t.name,
        "description": t.description,
        "input_schema": t.parameters or {"type": "object", "properties": {}},
    }


class AnthropicModel(ProtocolModel):
    protocol = "anthropic"
    output_cap_key = "max_tokens"
    path = "/v1/messages"

    def build_body(self, messages: list[Message], tools: list[ToolSchema]) -> dict[str, Any]:
        system, msgs = messages_to_anthropic(messages)
        body: dict[str, Any] = {"model": self.name, "max_tokens": DEFAULT_MAX_TOKENS, "messages": msgs}
        if system is not None:
            body["system"] = system
        if tools:
            body["tools"] = [tool_to_anthropic(t) for t in tools]
        body.update(self.request_kwargs)
        return body

    def problem(self, data: dict[str, Any]) -> str | None:
        if not isinstance(data.get("content"), list):
            return "the reply has no content list"
        return None

    def parse(self, data: dict[str, Any], out: ModelResponse) -> None:
        texts: list[str] = []
        thoughts: list[str] = []
        keep: list[dict[str, Any]] = []
        calls: list[ToolCall] = []
        for block in data.get("content") or ():
            kind = block.get("type")
            if kind == "text":
                texts.append(block.get("text") or "")
            elif kind == "thinking":
                keep.append(block)
                thoughts.append(block.get("thinking") or "")
            elif kind == "redacted_thinking":
                keep.append(block)
            elif kind == "tool_use":
                raw = block.get("input")
                args = raw if isinstance(raw, str) else json.dumps(raw if raw is not None else {})
                calls.append(
                    ToolCall(id=block.get("id") or f"toolu_{len(calls)}", name=block.get("name") or "", arguments=args)
                )
        out.message = Message(
            role="assistant",
            content="".join(texts) if texts else None,
            tool_calls=calls or None,
            reasoning="\n".join(thoughts) if thoughts else None,
            provider_items=keep or None,
        )
        out.finish_reason = data.get("stop_reason")
        usage = data.get("usage") or {}
        cache_read, written = (
            as_int(usage.get("cache_read_input_tokens")),
            as_int(usage.get("cache_creation_input_tokens")),
        )
        prompt = as_int(usage.get("input_tokens")) + cache_read + written
        out.usage = Usage(
            prompt_tokens=prompt,
            completion_tokens=as_int(usage.get("output_tokens")),
            cached_tokens=cache_read,
            cache_write_tokens=written,
        )


def make_anthropic_model(cfg: ModelConfig) -> AnthropicModel:
    import anthropic

    client_kwargs, request_kwargs = split_kwargs(cfg, anthropic)
    return AnthropicModel(cfg, anthropic.Anthropic(**client_kwargs), request_kwargs)
