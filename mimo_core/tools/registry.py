"""Build the tool list an agent offers its model from the config's `tools:` block.

    tools: [{tool: bash, config: {timeout: 300}}, {tool: read}, {tool: write}, {tool: edit}]

Each name is a tool plug-in (`mimo_core/plugins.py`): a class whose optional `config_model` (pydantic) checks
the entry's `config:` (none: it takes no keys) and whose optional classmethod
`from_config(config, default_timeout, observation_max_chars)` builds it (none: `cls()`).
`submit` is added when missing, because an agent must be able to finish.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from mimo_core import plugins
from mimo_core.config import ToolSpec
from mimo_core.errors import ConfigError
from mimo_core.tools.base import Tool
from mimo_core.tools.bash import BashConfig, BashTool
from mimo_core.tools.files import ReadTool
from mimo_core.tools.submit import SubmitTool


class _NoConfig(BaseModel):
    model_config = {"extra": "forbid"}


def _tool_class(name: str, where: str) -> Any:
    try:
        return plugins.lookup("tools", name)
    except ConfigError as e:
        raise ConfigError(f"{where}.tool: {e}") from None
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"{where}.tool: cannot load {name!r}: {e}") from None


def _parse_config(cls: Any, name: str, where: str, raw: dict[str, Any]) -> Any:
    model: type[BaseModel] = getattr(cls, "config_model", None) or _NoConfig
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        known = sorted(model.model_fields) or "none"
        problems = "; ".join(
            f"{'.'.join(map(str, err['loc']))}: {'unknown key' if err['type'] == 'extra_forbidden' else err['msg']}"
            for err in e.errors()
        )
        raise ConfigError(f"{where}.config: {problems} (known keys for {name}: {known})") from None


def build_tool(cls: Any, config: Any, default_timeout: float | None, observation_max_chars: int) -> Tool:
    make = getattr(cls, "from_config", None)
    return make(config, default_timeout, observation_max_chars) if make is not None else cls()


def check_tools(specs: list[ToolSpec]) -> list[tuple[str, Any, Any]]:
    """(name, tool class, parsed `config:`) of each spec, in order, without building a tool: what a config check
    needs (the names are tool plug-ins, none listed twice, each `config:` valid). Bad names/keys raise
    ConfigError naming `agent.tools[i]` and the known choices."""
    checked: list[tuple[str, Any, Any]] = []
    seen: set[str] = set()
    for i, spec in enumerate(specs):
        where = f"agent.tools[{i}]"
        if isinstance(spec, dict):
            spec = ToolSpec.model_validate(spec)
        cls = _tool_class(spec.tool, where)
        if spec.tool in seen:
            raise ConfigError(f"{where}.tool: {spec.tool!r} is listed more than once")
        seen.add(spec.tool)
        checked.append((spec.tool, cls, _parse_config(cls, spec.tool, where, spec.config)))
    return checked


def build_tools(
    specs: list[ToolSpec], default_timeout: float | None = None, observation_max_chars: int = 10000
) -> list[Tool]:
    """One Tool per spec (checked by `check_tools`), in order, plus `submit` if absent. `default_timeout`
    None: bash uses the environment's timeout."""
    checked = check_tools(specs)
    tools = [build_tool(cls, config, default_timeout, observation_max_chars) for _, cls, config in checked]
    if "submit" not in {name for name, _, _ in checked}:
        tools.append(SubmitTool())
    return tools


JUDGE_BASH = (
    "Run a bash command to inspect the submitted work (list, read, diff, grep) and return its combined "
    "output and exit code. The files are read-only: you are judging, not fixing. cd and export carry over "
    "between calls. Each call is killed after {timeout}. Long output is shortened to its beginning and end."
)


def read_only_tools(
    default_timeout: float | None = None,
    observation_max_chars: int = 10000,
    bash_timeout: float | None = None,
    shell: bool = True,
) -> list[Tool]:
    """Tools for an in-environment judge, none of which can write: read, submit for the verdict and,
    with `shell`, a bash over a read-only view of the final state (the caller gives one: a sandbox whose
    work folder is mounted read-only). Without such a view there is no shell at all. The judge runs after
    the verifier, so nothing it does could change the grade anyway."""
    tools: list[Tool] = [ReadTool(None, observation_max_chars)]
    if shell:
        tools.append(
            BashTool(
                BashConfig(timeout=bash_timeout),
                observation_max_chars,
                default_timeout,
                session="judge",
                description=JUDGE_BASH,
            )
        )
    tools.append(
        SubmitTool(
            description="Give your verdict and finish. Call this once, after inspecting the work.",
            message_description="Your verdict, in the format the instructions ask for.",
        )
    )
    return tools
