"""Tests against a real Docker engine (started on demand by mimo_core/testing/dockerd.py).

`dockerd` (session) starts our engine and base image once, exports DOCKER_HOST, and lets the engine
stop when the last test process using it ends; `docker_client` is an
SDK client on it; `make_docker_env(**spec)` starts a DockerEnvironment and stops it at teardown.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mimo_core.testing.dockerd import BASE_IMAGE, DockerdInfo, use_dockerd
from tests.host_needs import unavailable


@pytest.fixture(scope="session")
def dockerd() -> Iterator[DockerdInfo]:
    if os.geteuid() != 0:
        unavailable("starting a private dockerd needs root")
    with use_dockerd() as info:  # the engine stops after the last test process using it ends
        old = os.environ.get("DOCKER_HOST")
        os.environ["DOCKER_HOST"] = info.docker_host
        yield info
        if old is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = old


@pytest.fixture(scope="session")
def docker_client(dockerd: DockerdInfo) -> Iterator[Any]:
    import docker

    client = docker.DockerClient(base_url=dockerd.docker_host, version="auto")
    yield client
    client.close()


@pytest.fixture
def make_docker_env(dockerd: DockerdInfo) -> Iterator[Callable[..., Any]]:
    """Factory: `make_docker_env(cwd="/testbed", network=False, backend_kwargs={...}, start=True)`."""
    from mimo_core.config import EnvironmentConfig
    from mimo_core.environments.base import SandboxSpec
    from mimo_core.environments.docker import DockerEnvironment

    envs: list[DockerEnvironment] = []

    def make(backend_kwargs: dict[str, Any] | None = None, start: bool = True, **spec: Any) -> DockerEnvironment:
        spec.setdefault("image", BASE_IMAGE)
        spec.setdefault("labels", {"mimoagent.run_id": "pytest", "mimoagent.instance": "t"})
        env = DockerEnvironment(SandboxSpec(**spec), EnvironmentConfig(
            environment_class="docker", backend_kwargs=backend_kwargs or {}))
        envs.append(env)
        if start:
            env.start()
        return env

    yield make
    for env in envs:
        env.stop()
