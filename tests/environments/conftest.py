"""Fixtures for environment tests: started local environments that are always stopped, and `backend`,
the handle the contract suite (test_contract_*.py) runs every Environment check through, once per
backend: local, local inside bubblewrap, docker, kubernetes (the API stand-in) and e2b (the E2B API
stand-in, through the real `e2b` SDK)."""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mimo_core.config import EnvironmentConfig
from mimo_core.environments.base import Capabilities, SandboxSpec
from mimo_core.environments.local.environment import LocalEnvironment
from mimo_core.environments.registry import capabilities, make_environment
from testkit.dockerd import BASE_IMAGE
from tests.host_needs import needs_bwrap

MakeEnv = Callable[..., LocalEnvironment]

# Every backend the contract suite runs against; subsets for what only some can do (they are checked
# against each backend's declared capabilities in test_contract_lifecycle.py).
ALL_BACKENDS = ["local", pytest.param("bwrap", marks=needs_bwrap), "docker", "kubernetes", "e2b"]
CONFINED = [pytest.param("bwrap", marks=needs_bwrap), "docker", "kubernetes", "e2b"]
CONTAINERS = ["docker", "kubernetes", "e2b"]  # backends that start a task's image


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


@dataclass
class Backend:
    """One backend as the contract suite sees it: how to make a sandbox, and what of it is left after stop."""

    name: str
    config: EnvironmentConfig
    leftovers_of: Callable[[str], list[str]]  # run id -> what of that run's sandboxes still exists
    late: float  # seconds a killed or interrupted command may take to return past its deadline
    made: list[Any] = field(default_factory=list)

    @property
    def caps(self) -> Capabilities:
        return capabilities(self.config)

    def make(self, start: bool = True, **spec: Any) -> Any:
        """A sandbox of this backend, through the registry; its own run id; stopped at teardown."""
        spec.setdefault("cwd", "/testbed")
        spec.setdefault("timeout", 10.0)
        spec.setdefault("labels", {"mimoagent.run_id": f"contract-{uuid.uuid4().hex[:10]}", "mimoagent.instance": "t"})
        if self.name in CONTAINERS:
            spec.setdefault("image", BASE_IMAGE)
        env = make_environment(self.config, SandboxSpec(**spec))
        self.made.append(env)
        if start:
            env.start()
        return env

    def leftovers(self, env: Any) -> list[str]:
        return self.leftovers_of(env.spec.labels["mimoagent.run_id"])


def _local_leftovers(root: Path) -> Callable[[str], list[str]]:
    def left(run_id: str) -> list[str]:
        found = []
        for folder in root.glob("mimo-*") if root.is_dir() else ():
            label = folder / "sandbox.json"
            if not label.exists() or json.loads(label.read_text())["labels"].get("mimoagent.run_id") == run_id:
                found.append(f"folder {folder}")
        return found

    return left


def _docker_leftovers(client: Any) -> Callable[[str], list[str]]:
    def left(run_id: str) -> list[str]:
        return [
            f"container {c.name}"
            for c in client.containers.list(all=True, filters={"label": f"mimoagent.run_id={run_id}"})
        ]

    return left


def _k8s_leftovers(standin: Any) -> Callable[[str], list[str]]:
    def left(run_id: str) -> list[str]:
        def ours(obj: dict[str, Any]) -> bool:
            return (obj["metadata"].get("labels") or {}).get("mimoagent.run_id") == run_id

        pods = [f"pod {name}" for (_, name), p in list(standin.pods.items()) if ours(p)]
        policies = [f"network policy {name}" for (_, name), p in list(standin.policies.items()) if ours(p)]
        containers = [
            f"container {c.name}"
            for c in standin.docker.containers.list(
                all=True, filters={"label": f"k8s-standin/mimoagent.run_id={run_id}"}
            )
        ]
        return pods + policies + containers

    return left


@pytest.fixture(params=ALL_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """The backend named by the parameter. Docker and Kubernetes start their engine (and the stand-in)
    only when a test asks for them."""
    name = request.param
    if name in ("local", "bwrap"):
        root = tmp_path / "envs"
        config = EnvironmentConfig(
            environment_class="local",
            sandbox="bwrap" if name == "bwrap" else "none",
            backend_kwargs={"root": str(root)},
        )
        handle = Backend(name, config, _local_leftovers(root), late=3.5)
    elif name == "e2b":
        standin = request.getfixturevalue("e2b")
        handle = Backend(name, EnvironmentConfig(environment_class="e2b"), standin.leftovers, late=6.5)
    elif name == "docker":
        client = request.getfixturevalue("docker_client")
        handle = Backend(name, EnvironmentConfig(environment_class="docker"), _docker_leftovers(client), late=6.5)
    else:
        standin = request.getfixturevalue("k8s")
        handle = Backend(
            name,
            EnvironmentConfig(environment_class="kubernetes", startup_timeout=60),
            _k8s_leftovers(standin),
            late=6.5,
        )
    yield handle
    for env in handle.made:
        env.stop()
