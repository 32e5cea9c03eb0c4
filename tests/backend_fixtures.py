"""Fixtures for the container backends, shared by every test folder (registered in tests/conftest.py).

`dockerd` (session) starts our engine and base image once (testkit/dockerd.py), exports DOCKER_HOST, and
lets the engine stop when the last test process using it ends; `docker_client` is an SDK client on it;
`make_docker_env(**spec)` starts a DockerEnvironment and stops it at teardown.

`k8s` (session) starts the Kubernetes API stand-in (testkit/k8s_standin.py, pods backed by containers of
the test dockerd: no real cluster anywhere), writes a kubeconfig and exports KUBECONFIG (subprocesses,
such as CLI runs, use it too); `make_k8s_env(**spec)` starts a KubernetesEnvironment and stops it.

`e2b` (session) starts the E2B API stand-in (testkit/e2b_standin.py, sandboxes backed by containers of the
test dockerd: no E2B account anywhere) and exports E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY for the
real `e2b` SDK (subprocesses too). Its template `mimo-base-bookworm` is the base image.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.dockerd import BASE_IMAGE, DockerdInfo, use_dockerd
from testkit.e2b_standin import StandIn as E2BStandIn
from testkit.k8s_standin import StandIn
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


def _container_envs(backend: str, **config: Any) -> Iterator[Callable[..., Any]]:
    """Factory of started `backend` sandboxes (`config`: EnvironmentConfig defaults); stops them after."""
    from mimo_core.config import EnvironmentConfig
    from mimo_core.environments.base import SandboxSpec
    from mimo_core.environments.registry import environment_class

    cls = environment_class(backend)
    envs: list[Any] = []

    def make(
        backend_kwargs: dict[str, Any] | None = None,
        start: bool = True,
        startup_timeout: float | None = None,
        **spec: Any,
    ) -> Any:
        settings = {**config, **({} if startup_timeout is None else {"startup_timeout": startup_timeout})}
        spec.setdefault("image", BASE_IMAGE)
        spec.setdefault("labels", {"mimoagent.run_id": "pytest", "mimoagent.instance": "t"})
        env = cls(
            SandboxSpec(**spec),
            EnvironmentConfig(environment_class=backend, backend_kwargs=backend_kwargs or {}, **settings),
        )
        envs.append(env)
        if start:
            env.start()
        return env

    yield make
    for env in envs:
        env.stop()


@pytest.fixture
def make_docker_env(dockerd: DockerdInfo) -> Iterator[Callable[..., Any]]:
    """Factory: `make_docker_env(cwd="/testbed", network=False, backend_kwargs={...}, start=True)`."""
    yield from _container_envs("docker")


@pytest.fixture(scope="session")
def k8s() -> Iterator[StandIn]:
    if os.geteuid() != 0:
        unavailable("starting a private dockerd needs root")
    with use_dockerd() as info:  # the engine stops after the last test process using it ends
        yield from _standin(info)


def _standin(info: DockerdInfo) -> Iterator[StandIn]:
    standin = StandIn(info.docker_host)
    standin.start()
    # Not under pytest's basetemp: concurrent pytest processes rotate (delete) each other's old ones.
    home = Path(tempfile.mkdtemp(prefix="mimo-k8s-test-"))
    kubeconfig = standin.write_kubeconfig(home / "kubeconfig")
    old = {k: os.environ.get(k) for k in ("KUBECONFIG", "DOCKER_HOST")}
    os.environ["KUBECONFIG"] = str(kubeconfig)
    os.environ["DOCKER_HOST"] = info.docker_host
    from mimo_core.environments.kubernetes import client as k8s_client

    k8s_client._configs.clear()  # a kubeconfig parsed before this session's stand-in existed
    yield standin
    standin.stop()
    shutil.rmtree(home, ignore_errors=True)
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture
def kubeconfig() -> Path:
    return Path(os.environ["KUBECONFIG"])


@pytest.fixture
def make_k8s_env(k8s: StandIn) -> Iterator[Callable[..., Any]]:
    """Factory: `make_k8s_env(cwd="/testbed", network=False, backend_kwargs={...}, start=True, startup_timeout=60)`."""
    yield from _container_envs("kubernetes", startup_timeout=60)


E2B_TEMPLATES = {"mimo-base-bookworm": BASE_IMAGE}  # the template named after BASE_IMAGE (e2b/options.py)


@pytest.fixture(scope="session")
def e2b() -> Iterator[E2BStandIn]:
    if os.geteuid() != 0:
        unavailable("starting a private dockerd needs root")
    with use_dockerd() as info:  # the engine stops after the last test process using it ends
        standin = E2BStandIn(info.docker_host, E2B_TEMPLATES).start()
        old = {k: os.environ.get(k) for k in standin.sdk_env()}
        os.environ.update(standin.sdk_env())
        yield standin
        standin.stop()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
