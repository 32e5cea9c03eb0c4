"""Blackbox CLI agents: third-party coding CLIs behind the Agent seam, one small module each.

Adding a CLI is one module with a CliSpec subclass plus one line here and a table row in the README.
"""

from __future__ import annotations

import importlib

from mimo_core.agents.cli.spec import CliSpec

CLI_AGENTS = {
    "claude-code": "mimo_core.agents.cli.claude_code:ClaudeCode",
    "codex": "mimo_core.agents.cli.codex:Codex",
    "opencode": "mimo_core.agents.cli.opencode:OpenCode",
    "qwen-code": "mimo_core.agents.cli.qwen_code:QwenCode",
}


def spec_for(name: str) -> CliSpec | None:
    target = CLI_AGENTS.get(name)
    if target is None:
        return None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)()
