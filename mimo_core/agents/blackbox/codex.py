"""codex (npm @openai/codex): the Responses API, streamed.

The npm package is a Node launcher (bin/codex.js) for a native binary shipped as an optional dependency,
so it runs on the bundled Node. Headless: `codex exec --json` with the prompt on stdin,
`--dangerously-bypass-approvals-and-sandbox` (our sandbox is the sandbox), `--skip-git-repo-check`. The
endpoint is a custom model provider set with `-c` flags whose key is read from an environment variable
(`env_key`), so neither the command line nor CODEX_HOME holds it. Codex has no turn limit flag:
`step_limit` does not apply, `time_limit` does. Its session log is CODEX_HOME/sessions/**/rollout-*.jsonl,
whose `response_item` lines are Responses API items.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from mimo_core.agents.blackbox.spec import CliRun, CliSpec, Conversation, assistant, jsonl, text_of
from mimo_core.models.messages import Message

KEY_VAR = "MIMOAGENT_CODEX_API_KEY"


class Codex(CliSpec):
    name = "codex"
    package = "@openai/codex"
    default_version = "0.171.0"
    protocol = "responses"
    needs_node = True
    session_globs = ("sessions/*/*/*/rollout-*.jsonl",)

    def launcher_body(self, node: str) -> str:
        return f'exec {node} "$D/node_modules/@openai/codex/bin/codex.js" "$@"'

    def command(self, run: CliRun) -> str:
        provider = {"name": "mimoagent", "base_url": run.base_url, "env_key": KEY_VAR, "wire_api": "responses"}
        flags = ["-c", 'model_provider="mimoagent"']
        for key, value in provider.items():
            flags += ["-c", f"model_providers.mimoagent.{key}={json.dumps(value)}"]
        flags += ["-m", run.model_name]
        return (
            f"{run.binary} exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check"
            f" {' '.join(shlex.quote(f) for f in flags)} {run.args()} - < {shlex.quote(run.prompt_file)}"
        )

    def env(self, run: CliRun) -> dict[str, str]:
        return {KEY_VAR: run.api_key, "CODEX_HOME": run.state_dir, "RUST_LOG": "error", "NO_COLOR": "1"}

    def convert(self, stdout: str, files: dict[str, str], run: CliRun) -> Conversation:
        items = [
            ev["payload"]
            for text in files.values()
            for ev in jsonl(text)
            if ev.get("type") == "response_item" and isinstance(ev.get("payload"), dict)
        ]
        conv = responses_conversation(items)
        for ev in jsonl(stdout):
            if ev.get("type") in ("turn.failed", "error"):
                err = ev.get("error") or {}
                conv.error = str(err.get("message") if isinstance(err, dict) else err or ev.get("message"))[:500]
        return conv


def responses_conversation(items: list[dict[str, Any]]) -> Conversation:
    """Responses API items -> messages: consecutive reasoning / assistant text / calls form one turn."""
    conv = Conversation()
    turn: dict[str, Any] | None = None
    names: dict[str, str] = {}

    def flush() -> None:
        nonlocal turn
        if turn is not None:
            conv.messages.append(
                assistant("".join(turn["text"]), turn["calls"], "".join(turn["reasoning"]), turn["items"])
            )
            conv.steps += 1
            turn = None

    for item in items:
        kind, role = item.get("type"), item.get("role")
        if kind in ("reasoning", "function_call", "custom_tool_call", "local_shell_call") or (
            kind == "message" and role == "assistant"
        ):
            if turn is None:
                turn = {"text": [], "calls": [], "reasoning": [], "items": []}
            if kind == "reasoning":
                turn["reasoning"].append("".join(s.get("text", "") for s in item.get("summary") or ()))
                turn["items"].append({k: v for k, v in item.items() if k in ("type", "id", "encrypted_content")})
            elif kind == "message":
                turn["text"].append(text_of(item.get("content")))
            else:
                call_id = item.get("call_id") or item.get("id") or ""
                names[call_id] = item.get("name", kind)
                args = (
                    item.get("arguments")
                    if kind == "function_call"
                    else json.dumps(
                        {"input": item.get("input")} if kind == "custom_tool_call" else item.get("action", {})
                    )
                )
                turn["calls"].append((call_id, item.get("name", kind), args or "{}"))
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            flush()
            call_id = item.get("call_id", "")
            conv.messages.append(
                Message(role="tool", tool_call_id=call_id, name=names.get(call_id), content=text_of(item.get("output")))
            )
        elif kind == "message" and role == "user" and conv.messages:
            flush()
            conv.messages.append(Message(role="user", content=text_of(item.get("content"))))
    flush()
    return conv
