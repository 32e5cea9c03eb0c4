"""Blackbox CLI agents: third-party coding CLIs behind the Agent seam, one small module each.

Adding a CLI is one module with a CliSpec subclass plus one row here and a row in the README's table.
The protocol is repeated here (and checked against the module by a test) so that config validation
needs no import of the adapters.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from mimo_core.agents.blackbox.spec import CliSpec


class CliEntry(NamedTuple):
    target: str  # module:Class
    protocol: str  # what model.protocol must be


CLI_AGENTS = {
    "claude-code": CliEntry("mimo_core.agents.blackbox.claude_code:ClaudeCode", "anthropic"),
    "codex": CliEntry("mimo_core.agents.blackbox.codex:Codex", "responses"),
    "opencode": CliEntry("mimo_core.agents.blackbox.opencode:OpenCode", "chat"),
    "qwen-code": CliEntry("mimo_core.agents.blackbox.qwen_code:QwenCode", "chat"),
    "gemini-cli": CliEntry("mimo_core.agents.blackbox.gemini_cli:GeminiCli", "gemini"),
    "mini-swe-agent": CliEntry("mimo_core.agents.blackbox.mini_swe_agent:MiniSweAgent", "chat"),
}


def spec_for(name: str) -> CliSpec | None:
    entry = CLI_AGENTS.get(name)
    if entry is None:
        return None
    module, _, cls = entry.target.partition(":")
    return getattr(importlib.import_module(module), cls)()
