"""One real Ray cluster for the session's tests: a head and three worker nodes (2 CPUs and 2 `sandbox` slots
each), separate raylets on this machine, started once (~20-40 s on a loaded machine) and stopped after.
The node-loss test removes one worker node for good: every other test needs only two."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.ray_cluster import RayTestCluster
from tests.core.conftest import REPO, SECRET, base_url


@pytest.fixture(scope="session")
def ray_test_cluster() -> Iterator[RayTestCluster]:
    cluster = RayTestCluster(workers=3, cpus_per_node=2, resources={"sandbox": 2}).start()
    try:
        yield cluster
    finally:
        cluster.stop()


def ray_cli_env(cluster: RayTestCluster, server=None) -> dict[str, str]:
    env = {**os.environ, **cluster.env, "MIMOAGENT_OBSERVERS": "0", "MIMO_TEST_API_KEY": SECRET}
    if server is not None:
        env["MIMO_TEST_BASE_URL"] = base_url(server, "chat")
    return env


def ray_args(cluster: RayTestCluster, *extra: str) -> list[str]:
    return ["--runner", "ray", "--ray-address", cluster.address, *extra]


def run_mimo(args: list[str], env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mimo_core.cli", *args],
        cwd=REPO,
        env=env,
        text=True,
        capture_output=True,
        timeout=timeout,
    )


def start_mimo(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "mimo_core.cli", *args],
        cwd=REPO,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def rollout_files(out: Path) -> dict[str, set[str]]:
    """Each rollout folder's files (relative), for comparing two runs' outputs."""
    found: dict[str, set[str]] = {}
    for traj in out.rglob("traj.json"):
        folder = traj.parent
        found[str(folder.relative_to(out))] = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
    return found
