"""What one CLI agent adapter declares: its package, pinned version, protocol, how to launch it headless,
and how to turn its native session log into our messages. One subclass per CLI, one module each."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from mimo_core.models.messages import Message, ToolCall, ToolSchema


class CliRun(BaseModel):
    """One launch of a CLI, with paths as the sandbox sees them. `api_key` only ever travels in the
    environment of the CLI's process: it is never part of the command line or a file."""

    name: str  # the CLI (bin/<name> in `home`)
    home: str  # the installed folder (manifest.json, bin/<name>)
    state_dir: str  # the CLI's own config/session folder for this rollout, outside the task's cwd
    prompt_file: str
    workdir: str
    base_url: str  # the recording proxy, as the sandbox reaches it
    api_key: str
    model_name: str
    step_limit: int = 0
    max_retries: int = 0  # model.retry.max_attempts - 1, where the CLI lets us set it
    request_timeout: float = 600.0  # model.retry.timeout, seconds
    extra_args: list[str] = Field(default_factory=list)

    @property
    def binary(self) -> str:
        return shlex.quote(f"{self.home}/bin/{self.name}")

    def args(self) -> str:
        return " ".join(shlex.quote(a) for a in self.extra_args)


class Conversation(BaseModel):
    """What a native log says happened."""

    messages: list[Message] = Field(default_factory=list)
    steps: int = 0  # model turns, by the CLI's own count
    step_limit_hit: bool = False
    error: str | None = None  # the CLI's own account of a failure


class CliSpec:
    name: ClassVar[str]
    package: ClassVar[str]
    ecosystem: ClassVar[Literal["npm", "pypi"]] = "npm"
    default_version: ClassVar[str]
    protocol: ClassVar[str]  # anthropic | responses | chat | gemini: what its endpoint must speak
    needs_node: ClassVar[bool] = False
    # Where a CLI writes files worth keeping: globs relative to state_dir (its session logs).
    session_globs: ClassVar[tuple[str, ...]] = ()
    check_args: ClassVar[str] = "--version"  # a quick run that proves the placed install starts

    def launcher_body(self, node: str) -> str:
        """Shell lines run by bin/<name> with $D set to the install folder; must `exec` the CLI with "$@".
        `node` is the bundled runtime's path (meaningful when `needs_node`)."""
        raise NotImplementedError

    def after_install(self, folder: Path) -> None:
        """Fix-ups of a fresh install folder (before it is renamed into the cache); default none."""

    def command(self, run: CliRun) -> str:
        """The headless command line (no secrets in it); stdout goes to the rollout's native log."""
        raise NotImplementedError

    def env(self, run: CliRun) -> dict[str, str]:
        """Variables for the CLI's process: endpoint, key, model, no telemetry or update checks."""
        raise NotImplementedError

    def setup_files(self, run: CliRun) -> dict[str, str]:
        """Config files to write (path in the sandbox -> text) before the launch. Never holds the key."""
        return {}

    def convert(self, stdout: str, files: dict[str, str], run: CliRun) -> Conversation:
        """The conversation from the CLI's stdout and its session files (name -> text)."""
        raise NotImplementedError


def jsonl(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict):
            out.append(item)
    return out


def text_of(content: Any) -> str:
    """Text of a tool result / message content that may be a string or a list of typed blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                parts.append(str(block.get("text") or block.get("output") or ""))
            else:
                parts.append(str(block))
        return "\n".join(p for p in parts if p)
    if isinstance(content, dict):
        return str(content.get("text") or content.get("output") or json.dumps(content))
    return str(content)


def assistant(
    text: str | None,
    calls: list[tuple[str, str, Any]],
    reasoning: str | None = None,
    provider_items: list[dict[str, Any]] | None = None,
) -> Message:
    """An assistant message from (id, name, arguments) calls; arguments kept as the raw JSON text."""
    return Message(
        role="assistant",
        content=text or None,
        reasoning=reasoning or None,
        provider_items=provider_items or None,
        tool_calls=[ToolCall(id=i, name=n, arguments=a if isinstance(a, str) else json.dumps(a)) for i, n, a in calls]
        or None,
    )


def tools_from_request(protocol: str, body: dict[str, Any]) -> list[ToolSchema]:
    """The tool schemas a CLI offered its model, read from the first request it sent."""
    out: list[ToolSchema] = []
    if protocol == "gemini":
        for group in body.get("tools") or ():
            for fn in (group or {}).get("functionDeclarations") or ():
                params = fn.get("parametersJsonSchema") or fn.get("parameters") or {}
                out.append(
                    ToolSchema(name=fn.get("name", ""), description=fn.get("description") or "", parameters=params)
                )
        return out
    for tool in body.get("tools") or ():
        if not isinstance(tool, dict):
            continue
        if protocol == "anthropic":
            if "input_schema" in tool:
                out.append(
                    ToolSchema(
                        name=tool.get("name", ""),
                        description=tool.get("description") or "",
                        parameters=tool.get("input_schema") or {},
                    )
                )
        elif "function" in tool:
            fn = tool["function"]
            out.append(
                ToolSchema(
                    name=fn.get("name", ""),
                    description=fn.get("description") or "",
                    parameters=fn.get("parameters") or {},
                )
            )
        elif tool.get("type") == "function":
            out.append(
                ToolSchema(
                    name=tool.get("name", ""),
                    description=tool.get("description") or "",
                    parameters=tool.get("parameters") or {},
                )
            )
    return out


def system_prompt_from_request(protocol: str, body: dict[str, Any]) -> str | None:
    """The CLI's own system prompt, as it sent it (CLI agents build theirs; ours is not used)."""
    if protocol == "anthropic":
        system = body.get("system")
        return text_of(system) if system else None
    if protocol == "responses":
        if body.get("instructions"):
            return body["instructions"]
        for item in body.get("input") or ():
            if isinstance(item, dict) and item.get("role") in ("system", "developer"):
                return text_of(item.get("content"))
        return None
    if protocol == "gemini":
        inst = body.get("systemInstruction") or body.get("system_instruction") or {}
        return text_of(inst.get("parts")) if isinstance(inst, dict) else None
    for m in body.get("messages") or ():
        if m.get("role") in ("system", "developer"):
            return text_of(m.get("content"))
    return None
