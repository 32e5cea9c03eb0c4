"""The `bash` tool: a persistent shell session built only on `Environment.execute`.

Each call is a fresh `bash -c`, wrapped so it first restores the session (cwd and exported variables,
saved in `env.scratch_dir`) and saves it again on exit through an EXIT trap, which also preserves the
command's exit code. Because it needs nothing but `execute`, the same session semantics hold on every
backend. What persists: `cd` and `export`. What does not: shell options, functions, non-exported
variables, and the changes of a call that timed out (it is killed before it can save).
"""

from __future__ import annotations

import shlex
from typing import Any

from pydantic import BaseModel, ConfigDict

from mimo_core.environments.base import Environment
from mimo_core.messages import ToolSchema
from mimo_core.tools.args import check_args
from mimo_core.tools.base import ToolResult
from mimo_core.tools.truncate import truncate_middle

DESCRIPTION = (
    "Run a bash command and return its combined stdout/stderr and exit code. The shell session "
    "persists across calls: the working directory (cd) and exported environment variables (export) "
    "carry over; shell options, functions and non-exported variables do not. Commands are "
    "non-interactive (stdin is empty), so pass flags such as -y and avoid pagers and editors. "
    "Each call is killed after {timeout}; run long jobs in the background with output redirected "
    "to a file (cmd > log 2>&1 &). Long output is shortened to its beginning and end."
)


class BashConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    timeout: float | None = None  # seconds per call; default: the environment's timeout
    max_output_chars: int | None = None  # default: agent.observation_max_chars


class BashTool:
    def __init__(self, config: BashConfig | None = None, observation_max_chars: int = 10000,
                 default_timeout: float | None = None, session: str = "main",
                 description: str = DESCRIPTION) -> None:
        self.config = config or BashConfig()
        self.timeout = self.config.timeout or default_timeout  # None: ask the environment at run time
        self.max_chars = self.config.max_output_chars or observation_max_chars
        self.session = session
        when = f"{self.timeout:g} seconds" if self.timeout else "the environment's timeout"
        self.schema = ToolSchema(
            name="bash",
            description=description.format(timeout=when),
            parameters={
                "type": "object",
                "properties": {
                    "command": {
                        "type": "string",
                        "description": "The bash command(s) to run; may span several lines.",
                    },
                },
                "required": ["command"],
                "additionalProperties": False,
            },
        )

    def wrap(self, command: str, scratch_dir: str) -> str:
        """The command with session restore before it and save after it, all on its first line so
        error messages keep the model's own line numbers."""
        base = f"{scratch_dir.rstrip('/')}/.bash-{self.session}"
        cwd_f, env_f = shlex.quote(base + ".cwd"), shlex.quote(base + ".env")
        save = f"__mimo_rc=$?; pwd > {cwd_f} 2>/dev/null; export -p > {env_f} 2>/dev/null; exit $__mimo_rc"
        return (
            f"trap {shlex.quote(save)} EXIT; "
            f"if [ -f {env_f} ]; then unset $(compgen -e) 2>/dev/null; . {env_f} 2>/dev/null; fi; "
            f"if [ -f {cwd_f} ]; then read -r __mimo_d < {cwd_f}; cd -- \"$__mimo_d\" 2>/dev/null || "
            f"echo \"note: the previous directory $__mimo_d is gone; now in $PWD\" >&2; unset __mimo_d; fi; "
            f"{command}"
        )

    def run(self, args: dict[str, Any], env: Environment) -> ToolResult:
        check_args("bash", self.schema.parameters, args)
        timeout = self.timeout or env.spec.timeout
        result = env.execute(self.wrap(args["command"], env.scratch_dir), timeout=timeout)
        output = truncate_middle(result.output, self.max_chars)
        if output and not output.endswith("\n"):
            output += "\n"
        if result.timed_out:
            status = (f"[timed out after {timeout:g} seconds: the command was killed, along with every "
                      "process it started; its cd/export changes were not kept]")
        else:
            status = f"[exit code: {result.returncode}]"
        return ToolResult(output=(output or "(no output)\n") + status, returncode=result.returncode)
