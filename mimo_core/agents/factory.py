"""Agent types by name. Imports lazily so a run pays only for the agent it uses."""

from __future__ import annotations

import atexit
import threading

from mimo_core.agents.base import Agent
from mimo_core.agents.blackbox import CLI_AGENTS
from mimo_core.config import MAIN_AGENT_TYPES, MimoConfig, ModelConfig
from mimo_core.datasets.base import DatasetType
from mimo_core.errors import ConfigError
from mimo_core.models.base import Model

_models: dict[str, object] = {}
_models_lock = threading.Lock()
# Drop the clients while the interpreter is whole: an SDK client collected during module teardown
# prints an AttributeError traceback from its __del__.
atexit.register(_models.clear)


def shared_model(config: ModelConfig) -> Model:
    """One model client per distinct model block, shared by every rollout: connections get reused."""
    from mimo_core.models.factory import make_model

    key = config.model_dump_json()
    with _models_lock:
        if key not in _models:
            _models[key] = make_model(config)
        return _models[key]  # type: ignore[return-value]


def sandbox_mounts(config: MimoConfig) -> dict[str, str]:
    """Host folders the agent wants inside its sandbox (read-only): a CLI agent's install cache, so a
    container runs the install in place instead of getting a copy per rollout."""
    from mimo_core.environments.registry import capabilities

    if config.agent.type in CLI_AGENTS and not capabilities(config.environment).host_files:
        from mimo_core.agents.blackbox.placement import cache_mount

        return cache_mount()
    return {}


def make_agent(config: MimoConfig, dataset_type: DatasetType, cancel: threading.Event | None = None) -> Agent:
    kind = config.agent.type
    if kind == "default":
        from mimo_core.agents.default import DefaultAgent
        from mimo_core.tools.registry import build_tools

        tools = build_tools(config.agent.tools, config.environment.timeout, config.agent.observation_max_chars)
        return DefaultAgent(config.agent, shared_model(config.model), tools, cancel=cancel)
    if kind == "oracle":
        from mimo_core.agents.oracle import OracleAgent

        return OracleAgent(dataset_type)
    if kind in CLI_AGENTS:
        from mimo_core.agents.blackbox.runner import make_cli_agent

        return make_cli_agent(kind, config.agent, config.model, cancel=cancel)
    raise ConfigError(f"agent.type: unknown agent type {kind!r}; known: {list(MAIN_AGENT_TYPES)}")
