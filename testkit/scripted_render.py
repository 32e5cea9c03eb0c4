"""The scripted LLM server's replies as each protocol's non-streaming API renders them (chat, Responses,
Anthropic Messages, Gemini), and its error bodies. Streams are in scripted_stream.py."""

from __future__ import annotations

from typing import Any

from testkit.scripted_reply import Reply, arguments, signature_for
from testkit.scripted_stream import gemini_events, sse_payloads
from testkit.scripted_vllm import vllm_training_fields


def error_body(protocol: str, status: int, message: str | None = None) -> dict[str, Any]:
    kind = {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        429: "rate_limit_error",
    }.get(status, "api_error")
    message = message or f"scripted error {status}"
    if protocol == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "code": None, "param": None}}


def logprob_entries(reply: Reply, as_ids: bool) -> list[dict[str, Any]]:
    return [
        {
            "token": f"token_id:{1000 + i}" if as_ids else f"t{i}",
            "logprob": -0.01 * (i + 1),
            "bytes": None,
            "top_logprobs": [],
        }
        for i in range(reply.completion_tokens)
    ]


def render_chat(reply: Reply, body: dict[str, Any], n: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": arguments(reply, i, args)},
            }
            for i, (name, args) in enumerate(reply.tool_calls)
        ]
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    choice: dict[str, Any] = {
        "index": 0,
        "message": message,
        "finish_reason": "tool_calls" if reply.tool_calls else "stop",
        "logprobs": None,
    }
    out: dict[str, Any] = {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", ""),
        "choices": [choice],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
        },
    }
    if reply.logprobs:
        choice["logprobs"] = {"content": logprob_entries(reply, bool(body.get("return_tokens_as_token_ids")))}
        choice["token_ids"] = [1000 + i for i in range(reply.completion_tokens)]
        out["prompt_token_ids"] = list(range(1, reply.prompt_tokens + 1))
    else:
        vllm_training_fields(choice, out, body)
    return out


def render_responses(reply: Reply, body: dict[str, Any], n: int) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        output.append(
            {
                "type": "reasoning",
                "id": f"rs_{n}",
                "summary": [{"type": "summary_text", "text": reply.reasoning}],
                "encrypted_content": f"enc-{n}",
            }
        )
    if reply.content is not None:
        part: dict[str, Any] = {"type": "output_text", "text": reply.content, "annotations": []}
        if reply.logprobs:
            part["logprobs"] = logprob_entries(reply, False)
        output.append(
            {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed", "content": [part]}
        )
    for i, (name, args) in enumerate(reply.tool_calls):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{n}_{i}",
                "call_id": f"call_{n}_{i}",
                "name": name,
                "arguments": arguments(reply, i, args),
                "status": "completed",
            }
        )
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 0,
        "model": body.get("model", ""),
        "status": "completed",
        "output": output,
        "usage": {
            "input_tokens": reply.prompt_tokens,
            "output_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            "input_tokens_details": {"cached_tokens": reply.cached_tokens},
            "output_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
        },
    }


def render_anthropic(reply: Reply, body: dict[str, Any], n: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": signature_for(reply.reasoning)})
    if reply.content is not None:
        content.append({"type": "text", "text": reply.content})
    for i, (name, args) in enumerate(reply.tool_calls):
        raw = reply.raw_arguments.get(i) if reply.raw_arguments else None
        content.append(
            {"type": "tool_use", "id": f"toolu_{n}_{i}", "name": name, "input": raw if raw is not None else args}
        )
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", ""),
        "content": content,
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": reply.prompt_tokens - reply.cached_tokens - reply.cache_write_tokens,
            "output_tokens": reply.completion_tokens,
            "cache_read_input_tokens": reply.cached_tokens,
            "cache_creation_input_tokens": reply.cache_write_tokens,
        },
    }


def gemini_route(path: str) -> str | None:
    """Gemini puts the model and the method in the path: /v1beta/models/<model>:generateContent."""
    return "gemini" if path.endswith((":generateContent", ":streamGenerateContent")) else None


def render_gemini(reply: Reply, body: dict[str, Any], n: int) -> dict[str, Any]:
    [*chunks] = sse_payloads(gemini_events(reply, body, n))
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    return {**chunks[-1], "candidates": [{**chunks[-1]["candidates"][0], "content": {"role": "model", "parts": parts}}]}


RENDER = {"chat": render_chat, "responses": render_responses, "anthropic": render_anthropic, "gemini": render_gemini}
