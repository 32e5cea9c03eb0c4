"""`protocol: chat` — OpenAI Chat Completions (OpenAI, vLLM, SGLang, llama.cpp, gateways) through the
`openai` SDK.

Records the training extras when present (token ids and logprobs, in each server family's spelling:
`token_ids.py`). llama.cpp sends no prompt ids: with `return_token_ids` they are asked of the same server
(its `/apply-template` with the same body, then `/tokenize`) and kept beside the response.
"""

from __future__ import annotations

from typing import Any

from mimo_core.config import ModelConfig
from mimo_core.models.base import ModelResponse, Usage
from mimo_core.models.messages import Message, ToolCall, ToolSchema
from mimo_core.models.protocol import ProtocolModel, as_int, split_kwargs
from mimo_core.models.token_ids import PROMPT_IDS_ERROR_KEY, PROMPT_IDS_KEY, TOKEN_ID_KWARGS, is_llama_cpp, token_fields
from mimo_core.models.tool_args import canonical_arguments


def message_to_chat(m: Message) -> dict[str, Any]:
    """Content is always a string: strict servers (llama-cpp-python's request models) reject the
    `content: null` the spec allows beside tool calls, with an HTTP 500 on every later request. Tool-call
    arguments go back re-serialised (`tool_args.py`)."""
    out = m.to_openai(wire=True)
    if out["content"] is None:
        out["content"] = ""
    for call in out.get("tool_calls") or ():
        call["function"]["arguments"] = canonical_arguments(call["function"]["arguments"])
    return out


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
            ToolCall(
                id=c.get("id") or f"call_{i}",
                name=(c.get("function") or {}).get("name") or "",
                arguments=(c.get("function") or {}).get("arguments") or "",
            )
            for i, c in enumerate(msg.get("tool_calls") or ())
        ]
        reasoning = msg.get("reasoning_content")
        if reasoning is None:
            reasoning = msg.get("reasoning")
        out.message = Message(
            role="assistant",
            content=msg.get("content"),
            tool_calls=calls or None,
            reasoning=reasoning if isinstance(reasoning, str) else None,
        )
        out.finish_reason = choice.get("finish_reason")
        usage = data.get("usage") or {}
        out.usage = Usage(
            prompt_tokens=as_int(usage.get("prompt_tokens")),
            completion_tokens=as_int(usage.get("completion_tokens")),
            cached_tokens=as_int((usage.get("prompt_tokens_details") or {}).get("cached_tokens")),
            reasoning_tokens=as_int((usage.get("completion_tokens_details") or {}).get("reasoning_tokens")),
        )
        if self.cfg.return_token_ids and is_llama_cpp(data) and not isinstance(data.get(PROMPT_IDS_KEY), list):
            self._add_llama_prompt_ids(out)
        fields = token_fields(data)
        out.prompt_token_ids, out.token_ids, out.logprobs = fields.prompt_ids, fields.completion_ids, fields.logprobs

    def _add_llama_prompt_ids(self, out: ModelResponse) -> None:
        """The prompt as llama.cpp tokenized it: its own template applied to the same body, then its own
        tokenizer; kept only if the count is the reply's `usage.prompt_tokens` (else the reason is kept)."""
        root = str(self.client.base_url).rstrip("/").removesuffix("/v1")
        try:
            prompt = self.client.post(f"{root}/apply-template", body=out.request, cast_to=object)["prompt"]
            want = out.usage.prompt_tokens
            for add_special in (False, True):
                got = self.client.post(
                    f"{root}/tokenize",
                    cast_to=object,
                    body={"content": prompt, "add_special": add_special, "parse_special": True},
                )["tokens"]
                if len(got) == want:
                    out.response[PROMPT_IDS_KEY] = got
                    return
            out.response[PROMPT_IDS_ERROR_KEY] = (
                f"llama.cpp /tokenize gave {len(got)} prompt tokens, the reply counted {want}: prompt ids left out"
            )
        except Exception as e:  # an older server without these endpoints: the ids are just absent
            out.response[PROMPT_IDS_ERROR_KEY] = f"llama.cpp /apply-template + /tokenize failed: {type(e).__name__}"


def make_chat_model(cfg: ModelConfig) -> ChatModel:
    import openai

    client_kwargs, request_kwargs = split_kwargs(cfg, openai)
    if cfg.return_token_ids:
        request_kwargs = {**TOKEN_ID_KWARGS, **request_kwargs}
    return ChatModel(cfg, openai.OpenAI(**client_kwargs), request_kwargs)
