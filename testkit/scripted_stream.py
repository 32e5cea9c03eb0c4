"""Streaming renderings of a scripted Reply: the server-sent events each protocol's streaming API sends.

Third-party CLI agents (claude-code, codex, opencode, qwen-code, gemini-cli) only ever ask for streams,
so the scripted server answers `"stream": true` requests (and Gemini's `:streamGenerateContent`) with
these. Each function yields complete SSE frames; the server writes them with chunked encoding.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from testkit.scripted_reply import Reply, arguments, signature_for

CHUNK = 16  # characters per text/argument delta: several deltas per block, as real streams have


def _frame(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def _pieces(text: str) -> list[str]:
    return [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)] or [""]


def anthropic_events(reply: Reply, body: dict[str, Any], n: int) -> Iterator[bytes]:
    """Messages API stream: message_start, one start/delta.../stop per content block, message_delta, stop."""
    usage = {
        "input_tokens": reply.prompt_tokens - reply.cached_tokens - reply.cache_write_tokens,
        "output_tokens": 1,
        "cache_read_input_tokens": reply.cached_tokens,
        "cache_creation_input_tokens": reply.cache_write_tokens,
    }
    yield _frame(
        {
            "type": "message_start",
            "message": {
                "id": f"msg_{n}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", ""),
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        },
        "message_start",
    )
    index = 0

    def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> Iterator[bytes]:
        yield _frame({"type": "content_block_start", "index": index, "content_block": start}, "content_block_start")
        for d in deltas:
            yield _frame({"type": "content_block_delta", "index": index, "delta": d}, "content_block_delta")
        yield _frame({"type": "content_block_stop", "index": index}, "content_block_stop")

    if reply.reasoning is not None:
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(reply.reasoning)]
        deltas.append({"type": "signature_delta", "signature": signature_for(reply.reasoning)})
        yield from block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
        index += 1
    if reply.content is not None:
        yield from block(
            {"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in _pieces(reply.content)]
        )
        index += 1
    for i, (name, args) in enumerate(reply.tool_calls):
        start = {"type": "tool_use", "id": f"toolu_{n}_{i}", "name": name, "input": {}}
        yield from block(
            start, [{"type": "input_json_delta", "partial_json": p} for p in _pieces(arguments(reply, i, args))]
        )
        index += 1
    yield _frame(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use" if reply.tool_calls else "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": reply.completion_tokens},
        },
        "message_delta",
    )
    yield _frame({"type": "message_stop"}, "message_stop")


def _stream_tokens(reply: Reply, body: dict[str, Any]) -> tuple[list[int] | None, dict[str, Any]]:
    """vLLM's token ids and logprobs when the request asks for them (scripted_vllm.py)."""
    from testkit.scripted_vllm import vllm_stream_fields

    calls = [
        {"function": {"name": name, "arguments": arguments(reply, i, args)}}
        for i, (name, args) in enumerate(reply.tool_calls)
    ]
    return vllm_stream_fields({"content": reply.content, "tool_calls": calls}, body)


def chat_events(reply: Reply, body: dict[str, Any], n: int) -> Iterator[bytes]:
    """Chat Completions stream: role, content and tool-call deltas, a finish chunk, a usage chunk, [DONE]."""
    base = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0, "model": body.get("model", "")}

    def payload(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _frame(payload(delta, finish))

    prompt_ids, tokens = _stream_tokens(reply, body)
    first = payload({"role": "assistant", "content": ""})
    yield _frame(first if prompt_ids is None else {**first, "prompt_token_ids": prompt_ids})
    if reply.reasoning is not None:
        for p in _pieces(reply.reasoning):
            yield chunk({"reasoning_content": p})
    if reply.content is not None:
        for p in _pieces(reply.content):
            yield chunk({"content": p})
    for i, (name, args) in enumerate(reply.tool_calls):
        for j, p in enumerate(_pieces(arguments(reply, i, args))):
            call: dict[str, Any] = {"index": i, "function": {"arguments": p}}
            if j == 0:
                call = {
                    "index": i,
                    "id": f"call_{n}_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": p},
                }
            yield chunk({"tool_calls": [call]})
    finish = payload({}, "tool_calls" if reply.tool_calls else "stop")
    finish["choices"][0].update(tokens)  # vLLM spreads them over the chunks; a reader concatenates them
    yield _frame(finish)
    usage = {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
    }
    yield _frame({**base, "choices": [], "usage": usage})
    yield _frame("[DONE]")


def responses_events(reply: Reply, body: dict[str, Any], n: int, final: dict[str, Any]) -> Iterator[bytes]:
    """Responses stream: created, each output item added/delta/done, completed with the whole response."""
    seq = iter(range(1_000_000))

    def ev(kind: str, **fields: Any) -> bytes:
        return _frame({"type": kind, "sequence_number": next(seq), **fields}, kind)

    pending = {**final, "status": "in_progress", "output": [], "usage": None}
    yield ev("response.created", response=pending)
    yield ev("response.in_progress", response=pending)
    for idx, item in enumerate(final["output"]):
        kind = item["type"]
        if kind == "message":
            yield ev(
                "response.output_item.added", output_index=idx, item={**item, "status": "in_progress", "content": []}
            )
            part = item["content"][0]
            yield ev(
                "response.content_part.added",
                item_id=item["id"],
                output_index=idx,
                content_index=0,
                part={"type": "output_text", "text": "", "annotations": []},
            )
            for p in _pieces(part["text"]):
                yield ev(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=idx,
                    content_index=0,
                    delta=p,
                    logprobs=[],
                )
            yield ev(
                "response.output_text.done",
                item_id=item["id"],
                output_index=idx,
                content_index=0,
                text=part["text"],
                logprobs=[],
            )
            yield ev("response.content_part.done", item_id=item["id"], output_index=idx, content_index=0, part=part)
        elif kind == "function_call":
            yield ev(
                "response.output_item.added", output_index=idx, item={**item, "status": "in_progress", "arguments": ""}
            )
            for p in _pieces(item["arguments"]):
                yield ev("response.function_call_arguments.delta", item_id=item["id"], output_index=idx, delta=p)
            yield ev(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=idx,
                arguments=item["arguments"],
            )
        else:
            yield ev("response.output_item.added", output_index=idx, item=item)
        yield ev("response.output_item.done", output_index=idx, item=item)
    yield ev("response.completed", response=final)


def gemini_events(reply: Reply, body: dict[str, Any], n: int) -> Iterator[bytes]:
    """Gemini `streamGenerateContent?alt=sse`: GenerateContentResponse chunks, usage on the last one."""
    parts: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        parts.append({"text": reply.reasoning, "thought": True})
    if reply.content is not None:
        parts.extend({"text": p} for p in _pieces(reply.content))
    for i, (name, args) in enumerate(reply.tool_calls):
        parsed = json.loads(arguments(reply, i, args))
        parts.append({"functionCall": {"name": name, "args": parsed, "id": f"call_{n}_{i}"}})
    usage = {
        "promptTokenCount": reply.prompt_tokens,
        "candidatesTokenCount": reply.completion_tokens - reply.reasoning_tokens,  # thoughts are counted apart
        "totalTokenCount": reply.prompt_tokens + reply.completion_tokens,
        "cachedContentTokenCount": reply.cached_tokens,
        "thoughtsTokenCount": reply.reasoning_tokens,
    }
    for k, part in enumerate(parts):
        last = k == len(parts) - 1
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
        chunk: dict[str, Any] = {
            "candidates": [candidate],
            "modelVersion": body.get("model", "scripted"),
            "responseId": f"resp-{n}",
        }
        if last:
            candidate["finishReason"] = "STOP"
            chunk["usageMetadata"] = usage
        yield _frame(chunk)
    if not parts:
        yield _frame(
            {
                "candidates": [
                    {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}
                ],
                "usageMetadata": usage,
            }
        )


def sse_payloads(frames: Iterator[bytes]) -> Iterator[dict[str, Any]]:
    """The JSON payloads of rendered frames (for the non-streaming Gemini rendering)."""
    for frame in frames:
        for line in frame.decode().splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                yield json.loads(line[6:])
