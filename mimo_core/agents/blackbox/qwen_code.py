"""qwen-code (npm @qwen-code/qwen-code): OpenAI-compatible chat completions, streamed.

A Node CLI (needs Node >= 22): runs on the bundled runtime. Headless: the prompt as the positional
argument, `--yolo` (approve every tool), `--auth-type openai` with OPENAI_BASE_URL / OPENAI_API_KEY from
the environment, `-o stream-json` (claude-code's event format), `--max-session-turns` from step_limit.
QWEN_HOME puts its settings and session files (projects/<cwd>/chats/<session>.jsonl) in the rollout's
state folder.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from mimo_core.agents.blackbox.spec import CliRun, CliSpec, Conversation
from mimo_core.agents.blackbox.stream_json import stream_json_conversation


class QwenCode(CliSpec):
    name = "qwen-code"
    package = "@qwen-code/qwen-code"
    default_version = "0.24.4"
    protocol = "chat"
    needs_node = True
    session_globs = ("projects/*/chats/*.jsonl",)

    def launcher_body(self, node: str) -> str:
        return f'exec {node} "$D/node_modules/@qwen-code/qwen-code/cli-entry.js" "$@"'

    def after_install(self, folder: Path) -> None:
        """The package ships its ripgrep without the execute bit (it then falls back to a slower grep)."""
        for rg in folder.glob("node_modules/@qwen-code/qwen-code/vendor/ripgrep/*/rg"):
            rg.chmod(0o755)

    def command(self, run: CliRun) -> str:
        turns = f" --max-session-turns {run.step_limit}" if run.step_limit else ""
        return (
            f"{run.binary} --auth-type openai -m {shlex.quote(run.model_name)} --yolo -o stream-json{turns}"
            f' {run.args()} "$(cat {shlex.quote(run.prompt_file)})" < /dev/null'
        )

    def env(self, run: CliRun) -> dict[str, str]:
        return {
            "OPENAI_BASE_URL": run.base_url,
            "OPENAI_API_KEY": run.api_key,
            "QWEN_HOME": run.state_dir,
            "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
            "NO_COLOR": "1",
            "QWEN_USAGE_STATISTICS_ENABLED": "false",
        }  # else it reports to Aliyun RUM from the sandbox

    def convert(self, stdout: str, files: dict[str, str], run: CliRun) -> Conversation:
        return stream_json_conversation(stdout)
