"""claude-code (npm @anthropic-ai/claude-code): Anthropic Messages, streamed.

The npm package ships a native binary per platform (an optional dependency its postinstall links into
bin/claude.exe), so it needs no Node at run time. Headless: `-p` with the prompt on stdin,
`--output-format stream-json --verbose` (every message on stdout), `--dangerously-skip-permissions`
(IS_SANDBOX=1 lets it run as root), `--max-turns` from step_limit. CLAUDE_CONFIG_DIR keeps its config and
session files (projects/<cwd>/<session>.jsonl) in the rollout's state folder.
"""

from __future__ import annotations

import shlex

from mimo_core.agents.blackbox.spec import CliRun, CliSpec, Conversation
from mimo_core.agents.blackbox.stream_json import stream_json_conversation


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
        return (
            f"{run.binary} -p --output-format stream-json --verbose --dangerously-skip-permissions"
            f" --model {shlex.quote(run.model_name)}{turns} {run.args()} < {shlex.quote(run.prompt_file)}"
        )

    def env(self, run: CliRun) -> dict[str, str]:
        return {
            "ANTHROPIC_BASE_URL": run.base_url,
            "ANTHROPIC_API_KEY": run.api_key,
            "CLAUDE_CONFIG_DIR": run.state_dir,
            "IS_SANDBOX": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
            "CLAUDE_CODE_MAX_RETRIES": str(run.max_retries),
            "API_TIMEOUT_MS": str(int(run.request_timeout * 1000)),
        }

    def convert(self, stdout: str, files: dict[str, str], run: CliRun) -> Conversation:
        return stream_json_conversation(stdout)
