"""Fixtures for tool tests: started local environments (shared with the environment tests) and tools."""

from __future__ import annotations

import pytest

from mimo_core.config import ToolSpec
from mimo_core.environments.local.environment import LocalEnvironment
from mimo_core.tools.base import Tool
from mimo_core.tools.registry import build_tools
from tests.environments.conftest import MakeEnv, make_env

__all__ = ["MakeEnv", "make_env"]


@pytest.fixture
def env(make_env: MakeEnv) -> LocalEnvironment:
    return make_env()


@pytest.fixture
def tools() -> dict[str, Tool]:
    specs = [
        ToolSpec(tool="bash", config={"timeout": 10}),
        ToolSpec(tool="read"),
        ToolSpec(tool="write"),
        ToolSpec(tool="edit"),
    ]
    return {t.schema.name: t for t in build_tools(specs, default_timeout=None, observation_max_chars=2000)}
