"""Checks that a config can work at all, made when it loads, before any sandbox starts.

A config that can never work (a judge as the main agent, a backend option the backend does not take, a
template that does not compile or reads a variable no row provides, an unknown tool) would otherwise
fail the same way in every rollout, after a sandbox was paid for each. Each check raises a one-line
ConfigError naming the file and the dotted key.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from mimo_core import plugins
from mimo_core.config import AgentConfig, NamedConfig, read_config, read_configs
from mimo_core.datasets.base import Task
from mimo_core.errors import ConfigError

# Variables the agents add to every row's own fields (see DefaultAgent / JudgeAgent.initial_messages).
AGENT_VARIABLES = frozenset({"cwd"})
JUDGE_VARIABLES = AGENT_VARIABLES | {"rubrics", "verdict_format", "submission"}


def load_config(path: str | Path, overrides: list[dict[str, Any]] | None = None) -> NamedConfig:
    """`config.read_config`, then every check that does not need the dataset: what entry points call."""
    named = read_config(path, overrides)
    check_config(named)
    return named


def load_configs(paths: list[str], overrides: list[dict[str, Any]] | None = None) -> list[NamedConfig]:
    """`config.read_configs` (unique names), each checked as `load_config` does."""
    configs = read_configs(paths, overrides)
    for named in configs:
        check_config(named)
    return configs


def check_config(named: NamedConfig) -> None:
    """Everything about one config that does not depend on the dataset."""
    cfg = named.config
    where = named.path
    if not plugins.find("agents", cfg.agent.type).main:
        main = [n for n in plugins.names("agents") if plugins.find("agents", n).main]
        raise ConfigError(
            f"{where}: agent.type: {cfg.agent.type!r} cannot be the main agent (known: "
            f"{main}); a judge runs as environment.judge_agent"
        )
    _check_agent(named)
    _check_protocol(named)
    for key, agent in _agents(named):
        _check_templates(where, key, agent)
    _check_tools(named)
    _check_backend_kwargs(named)


def _agents(named: NamedConfig) -> list[tuple[str, AgentConfig]]:
    """(dotted key, agent block) of every agent the config runs, the judge with its effective prompts."""
    from mimo_core.agents.judge import judge_agent_config

    agents = [("agent", named.config.agent)]
    judge = named.config.environment.judge_agent
    if judge is not None:
        agents.append(("environment.judge_agent.agent", judge_agent_config(judge.agent)))
    return agents


def _check_templates(where: str, key: str, agent: AgentConfig) -> None:
    from mimo_core.agents.templates import check_syntax

    for field in ("system_template", "instance_template"):
        check_syntax(getattr(agent, field), f"{where}: {key}.{field}")


def _check_agent(named: NamedConfig) -> None:
    """The agent's plug-in imports (a missing dependency names its install), and a CLI agent that is not
    built in (whose protocol config validation could not know unimported) speaks the config's protocol."""
    from mimo_core.agents.blackbox import spec_for

    agent, protocol = named.config.agent.type, named.config.model.protocol
    try:
        spec = spec_for(agent)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"{named.path}: agent.type: cannot load {agent!r}: {e}") from None
    if spec is not None and spec.protocol != protocol:
        raise ConfigError(
            f"{named.path}: agent.type {agent} talks to its model in the {spec.protocol!r} protocol: "
            f"set model.protocol: {spec.protocol}"
        )


def _check_protocol(named: NamedConfig) -> None:
    """A protocol plug-in that is not built in imports (a built-in's SDK is imported when its client is made)."""
    protocol = plugins.find("protocols", named.config.model.protocol)
    if protocol.source == plugins.BUILT_IN:
        return
    try:
        plugins.load(protocol)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"{named.path}: model.protocol: cannot load {protocol.name!r}: {e}") from None


def _check_tools(named: NamedConfig) -> None:
    """The `tools:` of a tool-calling agent: the default one or a loop of your own (not the oracle's, not a
    CLI agent's: those have their own tools)."""
    from mimo_core.agents.blackbox import spec_for
    from mimo_core.tools.registry import check_tools

    agent = named.config.agent
    if agent.type == "oracle" or spec_for(agent.type) is not None:
        return
    try:
        check_tools(agent.tools)  # checked, not built: the agent builds its own in each rollout
    except ConfigError as e:
        raise ConfigError(f"{named.path}: {e}") from None


def _check_backend_kwargs(named: NamedConfig) -> None:
    """Each backend declares the options it takes as a pydantic model (`options_model`); a backend of
    your own without one gets its backend_kwargs unchecked."""
    from mimo_core.environments.registry import environment_class

    env = named.config.environment
    try:
        cls = environment_class(env.environment_class)
    except (ImportError, AttributeError, ValueError) as e:
        raise ConfigError(
            f"{named.path}: environment.environment_class: cannot load {env.environment_class!r}: {e}"
        ) from None
    model: type[BaseModel] | None = getattr(cls, "options_model", None)
    if model is None:
        return
    try:
        model.model_validate(env.backend_kwargs)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(map(str, err['loc']))}: {'unknown key' if err['type'] == 'extra_forbidden' else err['msg']}"
            for err in e.errors()
        )
        raise ConfigError(
            f"{named.path}: environment.backend_kwargs ({env.environment_class}): {problems} "
            f"(known keys: {sorted(model.model_fields)})"
        ) from None


def check_templates_fit(configs: Iterable[NamedConfig], tasks: Iterable[Task]) -> None:
    """A template variable that no row provides can never render: an error now. A variable only some rows
    provide is reported by each rollout whose row lacks it (status config_error)."""
    tasks = list(tasks)
    if not tasks:
        return
    provided: set[str] = set()
    for task in tasks:
        provided |= task.template_vars().keys()
    for named in configs:
        for key, agent in _agents(named):
            extra = JUDGE_VARIABLES if key != "agent" else AGENT_VARIABLES
            if agent.type == "oracle":  # the oracle renders no prompt
                continue
            _check_variables(named.path, key, agent, provided | extra)


def _check_variables(where: str, key: str, agent: AgentConfig, available: set[str]) -> None:
    from mimo_core.agents.templates import variables_used

    for field in ("system_template", "instance_template"):
        missing = variables_used(getattr(agent, field)) - available
        if missing:
            raise ConfigError(
                f"{where}: {key}.{field}: no dataset row provides {sorted(missing)}; available: {sorted(available)}"
            )
