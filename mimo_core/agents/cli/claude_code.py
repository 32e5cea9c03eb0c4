"""claude-code (npm @anthropic-ai/claude-code): Anthropic Messages, streamed.

The npm package ships a native binary per platform (an optional dependency its postinstall links into
bin/claude.exe), so it needs no Node at run time. Headless: `-p` with the prompt on stdin,
`--output-format stream-json --verbose` (every message on stdout), `--dangerously-skip-permissions`
(IS_SANDBOX=1 lets it run as root), `--max-turns` from step_limit. CLAUDE_CONFIG_DIR keeps its config and
session files (projects/<cwd>/<session>.jsonl) in the rollout's state folder.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from mimo_core.agents.cli.spec import CliRun, CliSpec, Conversation, assistant, jsonl, text_of
from mimo_core.messages import Message


class ClaudeCode(CliSpec):
    name = "claude-code"
    package = "@anthropic-ai/claude-code"
    default_version = "2.1.332"
    protocol = "anthropic"
    session_globs = ("projects/*/*.jsonl",)

    def launcher_body(self, node: str) -> str:
        return 'exec "$D/node_modules/@anthropic-ai/claude-code/bin/claude.exe" "$@"'

    def command(self, run: CliRun) -> str:
        turns = f" --max-turns {run.step_limit}" if run.step_limit else ""
        return (f"{run.binary} -p --output-format stream-json --verbose --dangerously-skip-permissions"
                f" --model {shlex.quote(run.model_name)}{turns} {run.args()} < {shlex.quote(run.prompt_file)}")

    def env(self, run: CliRun) -> dict[str, str]:
        return {
            "ANTHROPIC_BASE_URL": run.base_url, "ANTHROPIC_API_KEY": run.api_key, "CLAUDE_CONFIG_DIR": run.state_dir,
            "IS_SANDBOX": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
        }

    def convert(self, stdout: str, files: dict[str, str], run: CliRun) -> Conversation:
        """stream-json prints each content block of an assistant turn as its own event (same message id):
        they are merged back into one assistant message per turn."""
        conv = Conversation()
        names: dict[str, str] = {}
        current: dict[str, Any] | None = None
        for ev in jsonl(stdout):
            kind = ev.get("type")
            if kind == "assistant" and not ev.get("parent_tool_use_id"):
                msg = ev.get("message") or {}
                if current is None or current["id"] != msg.get("id"):
                    current = {"id": msg.get("id"), "blocks": []}
                    conv.messages.append(Message(role="assistant"))
                    conv.steps += 1
                current["blocks"].extend(msg.get("content") or [])
                conv.messages[-1] = _assistant(current["blocks"], names)
            elif kind == "user" and not ev.get("parent_tool_use_id"):
                current = None
                conv.messages.extend(_user(ev.get("message") or {}, names))
            elif kind == "result":
                if ev.get("subtype") == "error_max_turns":
                    conv.step_limit_hit = True
                elif ev.get("is_error"):
                    conv.error = str(ev.get("result") or ev.get("subtype") or "claude-code reported an error")[:500]
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
