"""opencode (npm opencode-ai): OpenAI-compatible chat completions, streamed.

The npm package links a native (Bun-compiled) binary from its platform dependency; no Node at run time.
Headless: `opencode run --format json --auto` (auto-approves permissions), `--title` so it makes no
title-generation call, `--pure` (no external plugins). The endpoint is a provider declared in
OPENCODE_CONFIG_CONTENT using the bundled `@ai-sdk/openai-compatible`, whose key is `{env:...}`: the
config names the variable, never the key. `step_limit` is the build agent's `steps`. Its session lives in
a SQLite database under XDG_DATA_HOME, so the command exports it as JSON after the run. Left alone it
would npm-install its plugin package at every start and git-snapshot the work tree at every step; neither
happens here (see `setup_files`, `snapshot: false`), so a rollout needs no registry and no extra copy.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from mimo_core.agents.blackbox.spec import CliRun, CliSpec, Conversation, assistant, jsonl
from mimo_core.models.messages import Message

KEY_VAR = "MIMOAGENT_OPENCODE_API_KEY"
PLUGIN_PACKAGE = "@opencode-ai/plugin"
_QUIET = (
    "AUTOUPDATE",
    "MODELS_FETCH",
    "LSP_DOWNLOAD",
    "DEFAULT_PLUGINS",
    "SHARE",
    "CLAUDE_CODE",
    "EXTERNAL_SKILLS",
    "PROJECT_CONFIG",
)


class OpenCode(CliSpec):
    name = "opencode"
    package = "opencode-ai"
    default_version = "1.18.33"
    protocol = "chat"
    session_globs = ("session.json",)

    def launcher_body(self, node: str) -> str:
        return 'exec "$D/node_modules/opencode-ai/bin/opencode.exe" "$@"'

    def config(self, run: CliRun) -> dict[str, Any]:
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "mimoagent",
            "options": {"baseURL": run.base_url, "apiKey": f"{{env:{KEY_VAR}}}"},
            "models": {run.model_name: {"name": run.model_name}},
        }
        cfg: dict[str, Any] = {
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": False,
            "share": "disabled",
            "snapshot": False,  # no git copy of the work tree per step (a large repository's cost; we diff it)
            "model": f"mimoagent/{run.model_name}",
            "provider": {"mimoagent": provider},
            "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow"},
        }
        if run.step_limit:
            cfg["agent"] = {"build": {"steps": run.step_limit}}
        return cfg

    def setup_files(self, run: CliRun) -> dict[str, str]:
        """At start opencode npm-installs `@opencode-ai/plugin` (~64 MB, for user plugins, which `--pure`
        turns off) into its config folder unless that folder's lock file already lists it: list it, so a
        rollout makes no registry call and works offline."""
        folder = f"{run.state_dir}/config/opencode"
        deps = {"dependencies": {PLUGIN_PACKAGE: "*"}}
        lock = {"name": "opencode", "lockfileVersion": 3, "requires": True, "packages": {"": deps}}
        return {
            f"{folder}/package.json": json.dumps(deps),
            f"{folder}/package-lock.json": json.dumps(lock),
            f"{folder}/node_modules/.package-lock.json": json.dumps({**lock, "packages": {}}),
        }

    def command(self, run: CliRun) -> str:
        b, state = run.binary, shlex.quote(run.state_dir)
        prompt = f'"$(cat {shlex.quote(run.prompt_file)})"'
        return (
            f"{b} run --format json --auto --pure --title mimoagent {run.args()} {prompt}"
            f" | tee {state}/events.jsonl; rc=${{PIPESTATUS[0]}};"
            f' sid=$(grep -o \'"sessionID":"[^"]*"\' {state}/events.jsonl | head -n 1 | cut -d\'"\' -f4);'
            f' if [ -n "$sid" ]; then {b} export --pure "$sid" > {state}/session.json 2>/dev/null; fi;'
            " exit $rc"
        )

    def env(self, run: CliRun) -> dict[str, str]:
        out = {f"OPENCODE_DISABLE_{k}": "1" for k in _QUIET}
        out.update(
            {
                KEY_VAR: run.api_key,
                "OPENCODE_CONFIG_CONTENT": json.dumps(self.config(run)),
                "OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER": "1",
                "XDG_DATA_HOME": f"{run.state_dir}/data",
                "XDG_CONFIG_HOME": f"{run.state_dir}/config",
                "XDG_CACHE_HOME": f"{run.state_dir}/cache",
                "XDG_STATE_HOME": f"{run.state_dir}/state",
            }
        )
        return out

    def convert(self, stdout: str, files: dict[str, str], run: CliRun) -> Conversation:
        conv = Conversation()
        try:
            session = json.loads(files.get("session.json") or "{}")
        except json.JSONDecodeError:
            session = {}
        for msg in session.get("messages") or ():
            info, parts = msg.get("info") or {}, msg.get("parts") or []
            if info.get("role") != "assistant":
                continue
            conv.messages.extend(_assistant_turn(parts))
            conv.steps += 1
            if info.get("error"):
                err = info["error"]
                conv.error = str((err.get("data") or {}).get("message") or err.get("name") or err)[:500]
        for ev in jsonl(stdout):
            if ev.get("type") == "error":
                conv.error = str(ev.get("error") or ev)[:500]
        return conv


def _assistant_turn(parts: list[dict[str, Any]]) -> list[Message]:
    text = "".join(p.get("text", "") for p in parts if p.get("type") == "text")
    reasoning = "".join(p.get("text", "") for p in parts if p.get("type") == "reasoning")
    tools = [p for p in parts if p.get("type") == "tool"]
    out = [
        assistant(
            text,
            [(p.get("callID", ""), p.get("tool", ""), (p.get("state") or {}).get("input") or {}) for p in tools],
            reasoning,
        )
    ]
    for p in tools:
        state = p.get("state") or {}
        body = state.get("output") if state.get("status") == "completed" else f"[error] {state.get('error', '')}"
        out.append(Message(role="tool", tool_call_id=p.get("callID", ""), name=p.get("tool"), content=str(body or "")))
    return out
