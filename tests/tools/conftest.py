"""Fixtures for tool tests: a started local environment and the default tool set."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mimo_core.config import EnvironmentConfig, ToolSpec
from mimo_core.environments.base import SandboxSpec
from mimo_core.environments.local import LocalEnvironment
from mimo_core.tools.base import Tool
from mimo_core.tools.registry import build_tools

MakeEnv = Callable[..., LocalEnvironment]


@pytest.fixture
def make_env(tmp_path: Path) -> Iterator[MakeEnv]:
    made: list[LocalEnvironment] = []

    def make(sandbox: str = "none", timeout: float = 10.0) -> LocalEnvironment:
        config = EnvironmentConfig(sandbox=sandbox, backend_kwargs={"root": str(tmp_path / "envs")})
        env = LocalEnvironment(SandboxSpec(cwd="/testbed", timeout=timeout), config)
        made.append(env)
        env.start()
        return env

    yield make
    for env in made:
        env.stop()


@pytest.fixture
def env(make_env: MakeEnv) -> LocalEnvironment:
    return make_env()


@pytest.fixture
def tools() -> dict[str, Tool]:
    specs = [ToolSpec(tool="bash", config={"timeout": 10}), ToolSpec(tool="read"), ToolSpec(tool="write"),
             ToolSpec(tool="edit")]
    return {t.schema.name: t for t in build_tools(specs, default_timeout=None, observation_max_chars=2000)}
