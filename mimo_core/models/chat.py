"""`protocol: chat` — OpenAI Chat Completions (OpenAI, vLLM, SGLang, gateways) through the `openai` SDK.

Records vLLM's training extras when present: per-token `logprobs` (with `return_tokens_as_token_ids`
the tokens read "token_id:123"), the choice's `token_ids` and the top-level `prompt_token_ids`.
"""

from __future__ import annotations

from typing import Any

from mimo_core.config import ModelConfig
from mimo_core.messages import Message, ToolCall, ToolSchema
from mimo_core.models._common import ProtocolModel, as_int, split_kwargs
from mimo_core.models.base import ModelResponse, Usage


def message_to_chat(m: Message) -> dict[str, Any]:
    """Content is always a string: strict servers (llama-cpp-python's request models) reject the
    `content: null` the spec allows beside tool calls, with an HTTP 500 on every later request."""
    out = m.to_openai(wire=True)
    if out["content"] is None:
        out["content"] = ""
    return out


def _token_ids_from_logprobs(entries: list[dict[str, Any]]) -> list[int] | None:
    ids = []
    for e in entries:
        token = e.get("token")
        if not isinstance(token, str) or not token.startswith("token_id:"):
            return None
        try:
            ids.append(int(token[9:]))
        except ValueError:
            return None
    return ids


# `model.return_token_ids: true` sends these (model_kwargs win): vLLM's logprobs, tokens spelt "token_id:N",
# and (vLLM >= 0.10.2) `prompt_token_ids` and the choice's `token_ids`.
VLLM_TOKEN_KWARGS = {"logprobs": True, "return_tokens_as_token_ids": True, "return_token_ids": True}


def token_fields(data: dict[str, Any]) -> tuple[list[int] | None, list[int] | None, list[float] | None]:
    """vLLM's training extras of a chat reply: prompt token ids, completion token ids, completion logprobs
    (each None when not sent). Also what the RL export reads from agent_msgs/."""
    choice = (data.get("choices") or [{}])[0]
    if not isinstance(choice, dict):
        return None, None, None
    token_ids = logprobs = None
    entries = (choice.get("logprobs") or {}).get("content")
    if entries:
        logprobs = [float(e.get("logprob", 0.0)) for e in entries]
        token_ids = _token_ids_from_logprobs(entries)
    if isinstance(choice.get("token_ids"), list):
        token_ids = choice["token_ids"]
    prompt_ids = data.get("prompt_token_ids", choice.get("prompt_token_ids"))
    return (prompt_ids if isinstance(prompt_ids, list) else None), token_ids, logprobs


class ChatModel(ProtocolModel):
    protocol = "chat"
    output_cap_key = "max_completion_tokens"
    path = "/chat/completions"

    def build_body(self, messages: list[Message], tools: list[ToolSchema]) -> dict[str, Any]:
        messages_wire = self.wire_lists.build(messages, "chat", message_to_chat)
        body: dict[str, Any] = {"model": self.name, "messages": messages_wire}
        if tools:
            body["tools"] = [t.to_openai() for t in tools]
        body.update(self.request_kwargs)
        return body

    def problem(self, data: dict[str, Any]) -> str | None:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return "the reply has no choices"
        return None

    def parse(self, data: dict[str, Any], out: ModelResponse) -> None:
        choices = data.get("choices") or [{}]
        choice = choices[0]
        msg = choice.get("message") or {}
        calls = [
            ToolCall(id=c.get("id") or f"call_{i}", name=(c.get("function") or {}).get("name") or "",
                     arguments=(c.get("function") or {}).get("arguments") or "")
            for i, c in enumerate(msg.get("tool_calls") or ())
        ]
        reasoning = msg.get("reasoning_content")
        if reasoning is None:
            reasoning = msg.get("reasoning")
        out.message = Message(role="assistant", content=msg.get("content"), tool_calls=calls or None,
                              reasoning=reasoning if isinstance(reasoning, str) else None)
        out.finish_reason = choice.get("finish_reason")
        usage = data.get("usage") or {}
        out.usage = Usage(
            prompt_tokens=as_int(usage.get("prompt_tokens")),
            completion_tokens=as_int(usage.get("completion_tokens")),
            cached_tokens=as_int((usage.get("prompt_tokens_details") or {}).get("cached_tokens")),
            reasoning_tokens=as_int((usage.get("completion_tokens_details") or {}).get("reasoning_tokens")),
        )
        out.prompt_token_ids, out.token_ids, out.logprobs = token_fields(data)


def make_chat_model(cfg: ModelConfig) -> ChatModel:
    import openai

    client_kwargs, request_kwargs = split_kwargs(cfg)
    if cfg.return_token_ids:
        request_kwargs = {**VLLM_TOKEN_KWARGS, **request_kwargs}
    return ChatModel(cfg, openai.OpenAI(**client_kwargs), request_kwargs)
