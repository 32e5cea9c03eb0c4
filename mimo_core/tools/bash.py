"""The `bash` tool: one persistent shell per rollout and session name.

Backends that offer `env.shell(name)` (local, bwrap, docker) keep a real long-lived bash fed over a
stream (environments/shell.py): `cd`, variables, functions, options and traps persist, as in a terminal.
A timeout kills the command's whole process tree and leaves the shell as it was; a shell that exits
(`exit`, `set -e` and a failure) is replaced by a new one in the same directory, and the result says so.

Other backends (a custom `module:Class` with only `execute`) get the older emulation: each call is a
fresh `bash -c` that restores the cwd and exported variables saved by the previous call.
"""

from __future__ import annotations

import shlex
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mimo_core.environments.base import Environment
from mimo_core.models.messages import ToolSchema
from mimo_core.tools.args import check_args
from mimo_core.tools.base import ToolResult
from mimo_core.tools.truncate import truncate_middle

DESCRIPTION = (
    "Run a bash command and return its combined stdout/stderr and exit code. The shell persists "
    "across calls like a terminal: the working directory, variables, functions and shell options "
    "carry over. Commands are non-interactive (stdin is empty), so pass flags such as -y and avoid "
    "pagers and editors. Each call is killed after {timeout}; run long jobs in the background with "
    "output redirected to a file (cmd > log 2>&1 &). Long output is shortened to its beginning and end."
)


class BashConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    timeout: float | None = Field(None, gt=0)  # seconds per call; default: the environment's timeout
    max_output_chars: int | None = None  # default: agent.observation_max_chars


class BashTool:
    config_model = BashConfig  # what its `tools:` entry's `config:` may hold (tools/registry.py)

    @classmethod
    def from_config(cls, config: BashConfig, default_timeout: float | None, observation_max_chars: int) -> BashTool:
        return cls(config, observation_max_chars, default_timeout)

    def __init__(
        self,
        config: BashConfig | None = None,
        observation_max_chars: int = 10000,
        default_timeout: float | None = None,
        session: str = "main",
        description: str = DESCRIPTION,
    ) -> None:
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
            f'if [ -f {cwd_f} ]; then read -r __mimo_d < {cwd_f}; cd -- "$__mimo_d" 2>/dev/null || '
            f'echo "note: the previous directory $__mimo_d is gone; now in $PWD" >&2; unset __mimo_d; fi; '
            f"{command}"
        )

    def run(self, args: dict[str, Any], env: Environment) -> ToolResult:
        check_args("bash", self.schema.parameters, args)
        timeout = self.timeout or env.spec.timeout
        shell = getattr(env, "shell", None)
        if shell is not None:
            res = shell(self.session).run(args["command"], timeout)
            output, rc, timed_out, note = res.output, res.returncode, res.timed_out, res.note
        else:
            result = env.execute(self.wrap(args["command"], env.scratch_dir), timeout=timeout)
            output, rc, timed_out, note = result.output, result.returncode, result.timed_out, ""
        output = truncate_middle(output, self.max_chars)
        if output and not output.endswith("\n"):
            output += "\n"
        if timed_out:
            status = (
                f"[timed out after {timeout:g} seconds: the command was killed, along with every process it started]"
            )
        else:
            status = f"[exit code: {rc}]"
        if note:
            status = f"{note}\n{status}"
        return ToolResult(output=(output or "(no output)\n") + status, returncode=rc)
