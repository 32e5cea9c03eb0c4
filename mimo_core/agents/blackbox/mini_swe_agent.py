"""mini-swe-agent (PyPI mini-swe-agent): OpenAI-compatible chat completions through litellm, not streamed.

Installed into a relocatable virtualenv (uv) in the per-version cache; for a container, as wheels for the
container's own python3 (site/, run with PYTHONPATH; see install.py). Headless: `mini -y
--exit-immediately` with the task as `-t`, its stock mini.yaml, `agent.step_limit` from ours and no cost
limit of its own (ours are applied from the proxy's records). The model is `openai/<model_name>` with
OPENAI_API_BASE / OPENAI_API_KEY from the environment; litellm's price map is read locally (no fetch).
Its trajectory file (`-o`) already holds OpenAI-format messages.
"""

from __future__ import annotations

import json
import shlex

from mimo_core.agents.blackbox.spec import CliRun, CliSpec, Conversation, assistant
from mimo_core.models.messages import Message


class MiniSweAgent(CliSpec):
    name = "mini-swe-agent"
    package = "mini-swe-agent"
    ecosystem = "pypi"
    default_version = "2.4.6"
    protocol = "chat"
    session_globs = ("trajectory.json",)
    check_args = "--help"  # it has no --version

    def launcher_body(self, node: str) -> str:
        return (
            '[ -d "$D/site" ] && PYTHONPATH="$D/site${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m '
            'minisweagent.run.mini "$@"\nexec "$D/venv/bin/python" -m minisweagent.run.mini "$@"'
        )

    def command(self, run: CliRun) -> str:
        limits = ["-c", "mini.yaml", "-c", f"agent.step_limit={run.step_limit}", "-c", "agent.cost_limit=0"]
        return (
            f'{run.binary} -y --exit-immediately -t "$(cat {shlex.quote(run.prompt_file)})"'
            f" -m {shlex.quote('openai/' + run.model_name)} -o {shlex.quote(run.state_dir + '/trajectory.json')}"
            f" {' '.join(shlex.quote(a) for a in limits)} {run.args()} < /dev/null"
        )

    def env(self, run: CliRun) -> dict[str, str]:
        return {
            "OPENAI_API_BASE": run.base_url,
            "OPENAI_API_KEY": run.api_key,
            "MSWEA_GLOBAL_CONFIG_DIR": run.state_dir,
            "MSWEA_CONFIGURED": "true",
            "MSWEA_SILENT_STARTUP": "1",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "NO_COLOR": "1",
        }

    def convert(self, stdout: str, files: dict[str, str], run: CliRun) -> Conversation:
        try:
            data = json.loads(files.get("trajectory.json") or "{}")
        except json.JSONDecodeError:
            data = {}
        conv = Conversation()
        for m in data.get("messages") or ():
            role = m.get("role")
            if role == "assistant":
                calls = [
                    (
                        c.get("id", ""),
                        (c.get("function") or {}).get("name", ""),
                        (c.get("function") or {}).get("arguments", "{}"),
                    )
                    for c in m.get("tool_calls") or ()
                ]
                conv.messages.append(assistant(m.get("content"), calls, m.get("reasoning_content")))
                conv.steps += 1
            elif role == "tool":
                conv.messages.append(
                    Message(
                        role="tool",
                        tool_call_id=m.get("tool_call_id"),
                        name="bash",
                        content=str(m.get("content") or ""),
                    )
                )
            elif role == "user" and conv.messages:
                conv.messages.append(Message(role="user", content=str(m.get("content") or "")))
        status = str((data.get("info") or {}).get("exit_status") or "")
        if status == "LimitsExceeded":
            conv.step_limit_hit = True
        elif status and status != "Submitted":
            conv.error = f"mini-swe-agent exit status {status}"
        return conv
