"""Fixtures for environment tests: started local environments that are always stopped."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mimo_core.config import EnvironmentConfig
from mimo_core.environments.base import SandboxSpec
from mimo_core.environments.local import LocalEnvironment

MakeEnv = Callable[..., LocalEnvironment]


@pytest.fixture
def make_env(tmp_path: Path) -> Iterator[MakeEnv]:
    """Start a LocalEnvironment under tmp_path; every one made is stopped at teardown."""
    made: list[LocalEnvironment] = []

    def make(sandbox: str = "none", root: Path | None = None, **spec: object) -> LocalEnvironment:
        spec.setdefault("cwd", "/testbed")
        spec.setdefault("timeout", 10.0)
        config = EnvironmentConfig(sandbox=sandbox, backend_kwargs={"root": str(root or tmp_path / "envs")})
        env = LocalEnvironment(SandboxSpec(**spec), config)
        made.append(env)
        env.start()
        return env

    yield make
    for env in made:
        env.stop()


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A folder outside /tmp (which bwrap replaces anyway), to prove the host itself stays untouched."""
    path = Path(tempfile.mkdtemp(prefix="mimo-test-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
