"""Tests of the kubernetes backend against the API server stand-in (mimo_core/testing/k8s_standin.py),
whose pods are containers of the test dockerd. No real cluster is involved anywhere.

`k8s` (session) starts the stand-in, writes a kubeconfig and exports KUBECONFIG (subprocesses, such as
CLI runs, use it too); `make_k8s_env(**spec)` starts a KubernetesEnvironment and stops it at teardown.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mimo_core.testing.dockerd import BASE_IMAGE, DockerdInfo, use_dockerd
from mimo_core.testing.k8s_standin import StandIn
from tests.host_needs import unavailable


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
    from mimo_core.environments import kubernetes

    kubernetes._configs.clear()  # a kubeconfig parsed before this session's stand-in existed
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
    """Factory: `make_k8s_env(cwd="/testbed", network=False, backend_kwargs={...}, start=True)`."""
    from mimo_core.config import EnvironmentConfig
    from mimo_core.environments.base import SandboxSpec
    from mimo_core.environments.kubernetes import KubernetesEnvironment

    envs: list[KubernetesEnvironment] = []

    def make(backend_kwargs: dict[str, Any] | None = None, start: bool = True, startup_timeout: float = 60,
             **spec: Any) -> KubernetesEnvironment:
        spec.setdefault("image", BASE_IMAGE)
        spec.setdefault("labels", {"mimoagent.run_id": "pytest", "mimoagent.instance": "t"})
        env = KubernetesEnvironment(SandboxSpec(**spec), EnvironmentConfig(
            environment_class="kubernetes", backend_kwargs=backend_kwargs or {}, startup_timeout=startup_timeout))
        envs.append(env)
        if start:
            env.start()
        return env

    yield make
    for env in envs:
        env.stop()
