"""Real local sandboxes and the demo dataset, shared by the dataset-type tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mimo_core.config import EnvironmentConfig
from mimo_core.datasets.base import Task
from mimo_core.datasets.loader import load_tasks
from mimo_core.environments.base import Environment, SandboxSpec
from mimo_core.environments.registry import make_environment

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo.jsonl"


@pytest.fixture(scope="session")
def demo_tasks() -> dict[str, Task]:
    return {t.instance_id: t for t in load_tasks(str(DEMO))}


@pytest.fixture
def new_env(tmp_path: Path) -> Iterator[Callable[[SandboxSpec], Environment]]:
    """The EnvFactory a rollout hands to `grade`: starts a local sandbox, stopped at teardown."""
    started: list[Environment] = []
    config = EnvironmentConfig(environment_class="local", backend_kwargs={"root": str(tmp_path)})

    def factory(spec: SandboxSpec) -> Environment:
        env = make_environment(config, spec)
        started.append(env)
        env.start()
        return env

    yield factory
    for env in started:
        env.stop()
