"""gemini-cli (npm @google/gemini-cli): the Gemini API (`streamGenerateContent?alt=sse`).

A Node CLI: runs on the bundled runtime. Headless: `-p` with the prompt, `--yolo`, `--skip-trust`,
`-o stream-json`. GOOGLE_GEMINI_BASE_URL points it at the proxy and GEMINI_API_KEY (environment only)
authenticates; GEMINI_CLI_HOME puts `.gemini/` (settings.json: API-key auth, turn limit, no telemetry
or update checks; session files tmp/<project>/chats/session-*.jsonl) in the rollout's state folder.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from mimo_core.agents.blackbox.spec import CliRun, CliSpec, Conversation, assistant, jsonl, text_of
from mimo_core.models.messages import Message


class GeminiCli(CliSpec):
    name = "gemini-cli"
    package = "@google/gemini-cli"
    default_version = "0.61.0"
    protocol = "gemini"
    needs_node = True
    session_globs = (".gemini/tmp/*/chats/session-*.jsonl",)

    def launcher_body(self, node: str) -> str:
        return f'exec {node} "$D/node_modules/@google/gemini-cli/bundle/gemini.js" "$@"'

    def command(self, run: CliRun) -> str:
        return (
            f'{run.binary} -p "$(cat {shlex.quote(run.prompt_file)})" --yolo --skip-trust -o stream-json'
            f" -m {shlex.quote(run.model_name)} {run.args()} < /dev/null"
        )

    def env(self, run: CliRun) -> dict[str, str]:
        return {
            "GOOGLE_GEMINI_BASE_URL": run.base_url,
            "GEMINI_API_KEY": run.api_key,
            "GEMINI_CLI_HOME": run.state_dir,
            "GEMINI_TELEMETRY_ENABLED": "false",
            "NO_COLOR": "1",
        }

    def setup_files(self, run: CliRun) -> dict[str, str]:
        settings: dict[str, Any] = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            "telemetry": {"enabled": False},
            "privacy": {"usageStatisticsEnabled": False},
        }
        if run.step_limit:
            settings["model"] = {"maxSessionTurns": run.step_limit}
        return {f"{run.state_dir}/.gemini/settings.json": json.dumps(settings, indent=1)}

    def convert(self, stdout: str, files: dict[str, str], run: CliRun) -> Conversation:
        """The session file is an append log: a record written again under the same id replaces the
        earlier one (an assistant turn is written once, then again with its tool calls)."""
        records: dict[str, dict[str, Any]] = {}
        for text in files.values():
            for rec in jsonl(text):
                if isinstance(rec.get("id"), str) and rec.get("type") in ("user", "gemini"):
                    records[rec["id"]] = rec
        conv = Conversation()
        for rec in records.values():
            if rec["type"] == "gemini":
                conv.messages.append(
                    assistant(
                        text_of(rec.get("content")),
                        [(c.get("id", ""), c.get("name", ""), c.get("args") or {}) for c in rec.get("toolCalls") or ()],
                        "".join(t.get("description", "") for t in rec.get("thoughts") or ()),
                    )
                )
                conv.steps += 1
            elif conv.messages:
                conv.messages.extend(_user(rec.get("content")))
        for ev in jsonl(stdout):
            if ev.get("type") == "result" and ev.get("status") not in (None, "success"):
                err = ev.get("error") or ev.get("status")
                conv.error = str(err.get("message") if isinstance(err, dict) else err)[:500]
                if "turn" in conv.error.lower() and "max" in conv.error.lower():
                    conv.step_limit_hit = True
        return conv


def _user(content: Any) -> list[Message]:
    if not isinstance(content, list):
        return [Message(role="user", content=text_of(content))]
    out, text = [], []
    for part in content:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if response:
            body = response.get("response") or {}
            result = body.get("output") if "output" in body else body.get("error", body)
            out.append(
                Message(
                    role="tool",
                    tool_call_id=response.get("id", ""),
                    name=response.get("name"),
                    content=result if isinstance(result, str) else json.dumps(result),
                )
            )
        elif isinstance(part, dict) and part.get("text"):
            text.append(part["text"])
    if text:
        out.append(Message(role="user", content="\n".join(text)))
    return out
