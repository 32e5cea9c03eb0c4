"""The `--output-format stream-json` event log claude-code prints and qwen-code copies: Anthropic-shaped
assistant messages, user messages carrying tool results, and a final `result` event."""

from __future__ import annotations

import json
from typing import Any

from mimo_core.agents.blackbox.spec import Conversation, assistant, jsonl, text_of
from mimo_core.models.messages import Message


def stream_json_conversation(stdout: str) -> Conversation:
    """Both CLIs print an assistant turn as several events (one per content block; claude-code repeats the
    message id, qwen-code does not): consecutive assistant events are merged back into one message."""
    conv = Conversation()
    names: dict[str, str] = {}
    blocks: list[dict[str, Any]] | None = None
    for ev in jsonl(stdout):
        kind = ev.get("type")
        if ev.get("parent_tool_use_id"):  # a sub-agent's own conversation
            continue
        if kind == "assistant":
            if blocks is None:
                blocks = []
                conv.messages.append(Message(role="assistant"))
                conv.steps += 1
            blocks.extend((ev.get("message") or {}).get("content") or [])
            conv.messages[-1] = _assistant(blocks, names)
        elif kind == "user":
            blocks = None
            conv.messages.extend(_user(ev.get("message") or {}, names))
        elif kind == "result":
            if str(ev.get("subtype", "")).startswith(("error_max_turns", "error_max_session_turns")):
                conv.step_limit_hit = True
            elif ev.get("is_error"):
                error = ev.get("result") or ev.get("error") or ev.get("subtype") or "the CLI reported an error"
                conv.error = str(error.get("message") if isinstance(error, dict) else error)[:500]
    return conv


def _assistant(blocks: list[dict[str, Any]], names: dict[str, str]) -> Message:
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    thinking = [b for b in blocks if b.get("type") in ("thinking", "redacted_thinking")]
    calls = []
    for b in blocks:
        if b.get("type") == "tool_use":
            names[b.get("id", "")] = b.get("name", "")
            calls.append((b.get("id", ""), b.get("name", ""), json.dumps(b.get("input", {}))))
    reasoning = "".join(b.get("thinking", "") for b in thinking)
    return assistant(text, calls, reasoning, thinking)


def _user(msg: dict[str, Any], names: dict[str, str]) -> list[Message]:
    content = msg.get("content")
    if isinstance(content, str):
        return [Message(role="user", content=content)]
    out, text = [], []
    for block in content or ():
        if block.get("type") == "tool_result":
            tid = block.get("tool_use_id", "")
            body = text_of(block.get("content"))
            if block.get("is_error"):
                body = f"[error] {body}"
            out.append(Message(role="tool", tool_call_id=tid, name=names.get(tid), content=body))
        elif block.get("type") == "text":
            text.append(block.get("text", ""))
    if text:
        out.append(Message(role="user", content="\n".join(text)))
    return out
