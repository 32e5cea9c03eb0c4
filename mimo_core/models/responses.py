"""`protocol: responses` — the OpenAI Responses API through the `openai` SDK.

Reasoning models return `reasoning` output items; they are kept verbatim in `Message.provider_items` and
replayed before the turn's message and function calls, as the API requires for multi-turn tool use.
`max_tokens` is accepted as a synonym of `max_output_tokens`, so one profile works across protocols.
"""

from __future__ import annotations

from typing import Any

from mimo_core.config import ModelConfig
from mimo_core.models.base import ModelResponse, Usage
from mimo_core.models.messages import Message, ToolCall, ToolSchema
from mimo_core.models.protocol import ProtocolModel, as_int, split_kwargs
from mimo_core.models.tool_args import canonical_arguments


def message_items(m: Message) -> list[dict[str, Any]]:
    """The Responses input items of one message (an assistant turn may be several)."""
    if m.role == "tool":
        return [{"type": "function_call_output", "call_id": m.tool_call_id or "", "output": m.content or ""}]
    if m.role == "assistant":
        items: list[dict[str, Any]] = list(m.provider_items or ())
        if m.content:
            items.append({"role": "assistant", "content": m.content})
        for c in m.tool_calls or ():
            items.append(
                {
                    "type": "function_call",
                    "call_id": c.id,
                    "name": c.name,
                    "arguments": canonical_arguments(c.arguments),
                }
            )
        return items
    return [{"role": m.role, "content": m.content or ""}]


def tool_to_responses(t: ToolSchema) -> dict[str, Any]:
    return {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters}


class ResponsesModel(ProtocolModel):
    protocol = "responses"
    output_cap_key = "max_output_tokens"
    path = "/responses"

    def __init__(self, cfg: ModelConfig, client: Any, request_kwargs: dict[str, Any]):
        if "max_tokens" in request_kwargs and "max_output_tokens" not in request_kwargs:
            request_kwargs = dict(request_kwargs)
            request_kwargs["max_output_tokens"] = request_kwargs.pop("max_tokens")
        super().__init__(cfg, client, request_kwargs)

    def build_body(self, messages: list[Message], tools: list[ToolSchema]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.name,
            "input": self.wire_lists.build(messages, "responses", message_items, flatten=True),
        }
        if tools:
            body["tools"] = [tool_to_responses(t) for t in tools]
        body.update(self.request_kwargs)
        return body

    def problem(self, data: dict[str, Any]) -> str | None:
        if not isinstance(data.get("output"), list):
            return "the reply has no output list"
        return None

    def parse(self, data: dict[str, Any], out: ModelResponse) -> None:
        texts: list[str] = []
        thoughts: list[str] = []
        reasoning_items: list[dict[str, Any]] = []
        calls: list[ToolCall] = []
        logprobs: list[float] = []
        for item in data.get("output") or ():
            kind = item.get("type")
            if kind == "reasoning":
                reasoning_items.append(item)
                for part in (item.get("summary") or []) + (item.get("content") or []):
                    if isinstance(part.get("text"), str):
                        thoughts.append(part["text"])
            elif kind == "message":
                for part in item.get("content") or ():
                    if part.get("type") == "output_text":
                        texts.append(part.get("text") or "")
                        logprobs.extend(float(e.get("logprob", 0.0)) for e in part.get("logprobs") or ())
                    elif part.get("type") == "refusal":
                        texts.append(part.get("refusal") or "")
            elif kind == "function_call":
                calls.append(
                    ToolCall(
                        id=item.get("call_id") or item.get("id") or f"call_{len(calls)}",
                        name=item.get("name") or "",
                        arguments=item.get("arguments") or "",
                    )
                )
        out.message = Message(
            role="assistant",
            content="".join(texts) if texts else None,
            tool_calls=calls or None,
            reasoning="\n".join(thoughts) if thoughts else None,
            provider_items=reasoning_items or None,
        )
        status = data.get("status")
        reason = (data.get("incomplete_details") or {}).get("reason")
        out.finish_reason = f"{status}:{reason}" if reason else status
        usage = data.get("usage") or {}
        out.usage = Usage(
            prompt_tokens=as_int(usage.get("input_tokens")),
            completion_tokens=as_int(usage.get("output_tokens")),
            cached_tokens=as_int((usage.get("input_tokens_details") or {}).get("cached_tokens")),
            reasoning_tokens=as_int((usage.get("output_tokens_details") or {}).get("reasoning_tokens")),
        )
        if logprobs:
            out.logprobs = logprobs


def make_responses_model(cfg: ModelConfig) -> ResponsesModel:
    import openai

    client_kwargs, request_kwargs = split_kwargs(cfg, openai)
    return ResponsesModel(cfg, openai.OpenAI(**client_kwargs), request_kwargs)
