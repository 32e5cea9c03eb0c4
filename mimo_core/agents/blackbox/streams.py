"""Reassemble a streamed model response (server-sent events) into the body the non-streaming API returns.

The recording proxy passes streams through untouched and keeps a copy; this turns the copy into one
response object per call for agent_msgs/, and reads the call's token usage out of it.
"""

from __future__ import annotations

import json
from typing import Any

from mimo_core.models.base import Usage


def protocol_of(path: str) -> str:
    """Which API a request path belongs to: anthropic | responses | chat | gemini | other."""
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/chat/completions"):
        return "chat"
    if ":generateContent" in path or ":streamGenerateContent" in path:
        return "gemini"
    return "other"


def sse_events(raw: bytes) -> list[tuple[str | None, Any]]:
    """(event name, parsed data) per frame; `[DONE]` and undecodable frames are dropped."""
    out: list[tuple[str | None, Any]] = []
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    for frame in text.split("\n\n"):
        event, data = None, []
        for line in frame.split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
        if not data or data == ["[DONE]"]:
            continue
        try:
            out.append((event, json.loads("\n".join(data))))
        except json.JSONDecodeError:
            continue
    return out


def reassemble(protocol: str, raw: bytes, is_stream: bool) -> dict[str, Any]:
    """The response as one object; a body that is neither JSON nor SSE is kept as text."""
    if not is_stream:
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            return {"raw_text": raw.decode("utf-8", errors="replace")}
        return data if isinstance(data, dict) else {"json": data}
    events = [d for _, d in sse_events(raw) if isinstance(d, dict)]
    build = {"anthropic": _anthropic, "chat": _chat, "responses": _responses, "gemini": _gemini}.get(protocol)
    out: dict[str, Any] = build(events) if build else {"events": events}
    out["_stream"] = True
    return out


def _anthropic(events: list[dict[str, Any]]) -> dict[str, Any]:
    msg: dict[str, Any] = {"content": []}
    partial: dict[int, str] = {}
    for ev in events:
        kind = ev.get("type")
        if kind == "message_start":
            msg = {**ev.get("message", {}), "content": []}
        elif kind == "content_block_start":
            msg["content"].append(dict(ev.get("content_block", {})))
        elif kind == "content_block_delta" and msg["content"]:
            i = min(ev.get("index", 0), len(msg["content"]) - 1)
            block, d = msg["content"][i], ev.get("delta", {})
            dt = d.get("type")
            if dt == "text_delta":
                block["text"] = block.get("text", "") + d.get("text", "")
            elif dt == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + d.get("thinking", "")
            elif dt == "signature_delta":
                block["signature"] = block.get("signature", "") + d.get("signature", "")
            elif dt == "input_json_delta":
                partial[i] = partial.get(i, "") + d.get("partial_json", "")
        elif kind == "message_delta":
            msg.update(ev.get("delta", {}))
            msg["usage"] = {**msg.get("usage", {}), **ev.get("usage", {})}
        elif kind == "error":
            msg["error"] = ev.get("error")
    for i, text in partial.items():
        try:
            msg["content"][i]["input"] = json.loads(text) if text else {}
        except json.JSONDecodeError:
            msg["content"][i]["input"] = text
    return msg


def _chat(events: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"object": "chat.completion"}
    message: dict[str, Any] = {"role": "assistant", "content": None}
    calls: dict[int, dict[str, Any]] = {}
    finish = None
    token_ids: list[int] = []  # vLLM's training extras, spread over the chunks when asked for
    logprobs: list[dict[str, Any]] = []
    for ev in events:
        out.setdefault("id", ev.get("id"))
        out.setdefault("model", ev.get("model"))
        if ev.get("usage"):
            out["usage"] = ev["usage"]
        if isinstance(ev.get("prompt_token_ids"), list):
            out["prompt_token_ids"] = ev["prompt_token_ids"]
        for choice in ev.get("choices") or ():
            token_ids.extend(choice.get("token_ids") or ())
            logprobs.extend((choice.get("logprobs") or {}).get("content") or ())
            d = choice.get("delta") or {}
            for key in ("content", "reasoning_content", "reasoning"):
                if d.get(key):
                    message[key] = (message.get(key) or "") + d[key]
            for tc in d.get("tool_calls") or ():
                slot = calls.setdefault(
                    tc.get("index", 0), {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
                )
                slot["id"] = tc.get("id") or slot["id"]
                fn = tc.get("function") or {}
                slot["function"]["name"] += fn.get("name") or ""
                slot["function"]["arguments"] += fn.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    out["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
    if token_ids:
        out["choices"][0]["token_ids"] = token_ids
    if logprobs:
        out["choices"][0]["logprobs"] = {"content": logprobs}
    return out


def _responses(events: list[dict[str, Any]]) -> dict[str, Any]:
    items: dict[int, dict[str, Any]] = {}
    for ev in events:
        if ev.get("type") in ("response.completed", "response.failed", "response.incomplete"):
            return dict(ev.get("response") or {})
        if ev.get("type") == "response.output_item.done":
            items[ev.get("output_index", len(items))] = ev.get("item", {})
    return {"object": "response", "status": "incomplete", "output": [items[i] for i in sorted(items)]}


def _gemini(events: list[dict[str, Any]]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    out: dict[str, Any] = {}
    finish = None
    for ev in events:
        for cand in ev.get("candidates") or ():
            for part in (cand.get("content") or {}).get("parts") or ():
                last = parts[-1] if parts else None
                if (
                    last is not None
                    and "text" in part
                    and "text" in last
                    and bool(last.get("thought")) == bool(part.get("thought"))
                ):
                    last["text"] += part["text"]
                else:
                    parts.append(dict(part))
            finish = cand.get("finishReason") or finish
        if ev.get("usageMetadata"):
            out["usageMetadata"] = ev["usageMetadata"]
        out.setdefault("modelVersion", ev.get("modelVersion"))
    out["candidates"] = [{"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}]
    return out


def usage_of(protocol: str, response: dict[str, Any]) -> Usage:
    """Token usage of one reassembled response, in our protocol-neutral shape."""
    u = response.get("usageMetadata" if protocol == "gemini" else "usage") or {}
    if not isinstance(u, dict):
        return Usage()

    def num(key: str) -> int:
        value = u.get(key)
        return value if isinstance(value, int) else 0

    if protocol == "anthropic":
        cached, written = num("cache_read_input_tokens"), num("cache_creation_input_tokens")
        return Usage(
            prompt_tokens=num("input_tokens") + cached + written,
            completion_tokens=num("output_tokens"),
            cached_tokens=cached,
            cache_write_tokens=written,
        )
    if protocol == "responses":
        return Usage(
            prompt_tokens=num("input_tokens"),
            completion_tokens=num("output_tokens"),
            cached_tokens=(u.get("input_tokens_details") or {}).get("cached_tokens") or 0,
            reasoning_tokens=(u.get("output_tokens_details") or {}).get("reasoning_tokens") or 0,
        )
    if protocol == "gemini":
        return Usage(  # Gemini counts thoughts beside the candidates: both are output (and billed so)
            prompt_tokens=num("promptTokenCount"),
            completion_tokens=num("candidatesTokenCount") + num("thoughtsTokenCount"),
            cached_tokens=num("cachedContentTokenCount"),
            reasoning_tokens=num("thoughtsTokenCount"),
        )
    return Usage(
        prompt_tokens=num("prompt_tokens"),
        completion_tokens=num("completion_tokens"),
        cached_tokens=(u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0,
        reasoning_tokens=(u.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0,
    )
