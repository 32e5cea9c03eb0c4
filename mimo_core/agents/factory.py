"""Agents by name (`mimo_core/plugins.py`'s agent plug-ins). Imports lazily so a run pays only for the agent
it uses."""

from __future__ import annotations

import atexit
import threading

from mimo_core import plugins
from mimo_core.agents.base import Agent
from mimo_core.agents.blackbox import spec_for
from mimo_core.config import MimoConfig, ModelConfig
from mimo_core.datasets.base import DatasetType
from mimo_core.errors import ConfigError
from mimo_core.models.base import Model

_models: dict[str, Model] = {}
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
        return _models[key]


def sandbox_mounts(config: MimoConfig) -> dict[str, str]:
    """Host folders the agent wants inside its sandbox (read-only): a CLI agent's install cache, so a
    container runs the install in place instead of getting a copy per rollout."""
    from mimo_core.environments.registry import capabilities

    if spec_for(config.agent.type) is not None and not capabilities(config.environment).host_files:
        from mimo_core.agents.blackbox.placement import cache_mount

        return cache_mount()
    return {}


def make_agent(config: MimoConfig, dataset_type: DatasetType, cancel: threading.Event | None = None) -> Agent:
    """The agent `agent.type` names: a CLI agent (a `CliSpec`) or a class with `from_config(config,
    dataset_type, cancel)`, which is how every other agent plug-in is built."""
    kind = config.agent.type
    try:
        plugin = plugins.find("agents", kind)
    except ConfigError as e:
        raise ConfigError(f"agent.type: {e}") from None
    if not plugin.main:
        raise ConfigError(f"agent.type: {kind!r} cannot be the main agent; a judge runs as environment.judge_agent")
    if spec_for(kind) is not None:
        from mimo_core.agents.blackbox.runner import make_cli_agent

        return make_cli_agent(kind, config.agent, config.model, cancel=cancel)
    return plugins.load(plugin).from_config(config, dataset_type, cancel)
