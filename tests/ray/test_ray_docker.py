"""Docker sandboxes under Ray: a worker node given its own engine (DOCKER_HOST in its environment) runs
the demo's rollouts in containers; the driver has no Docker engine at all."""

from __future__ import annotations

import os
from pathlib import Path

from mimo_core.records.results import ResultsStore
from testkit.ray_cluster import RayTestCluster
from tests.core.conftest import REPO
from tests.ray.conftest import ray_args, run_mimo


def test_docker_rollouts_run_on_the_node_with_the_engine(
    tmp_path: Path,
    ray_test_cluster: RayTestCluster,
    dockerd,
    docker_client,
) -> None:
    node = ray_test_cluster.add_worker(env={"DOCKER_HOST": dockerd.docker_host}, resources={"docker": 2})
    try:
        env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
        env.update({**ray_test_cluster.env, "MIMOAGENT_OBSERVERS": "0"})
        out = tmp_path / "out"
        args = [
            "-c",
            str(REPO / "configs/demo_docker.yaml"),
            "--dataset",
            str(REPO / "examples/demo.jsonl"),
            "--recalc-input",
            "gt",
            "--slice",
            "0:2",
            "--workers",
            "2",
            "-o",
            str(out),
            "--run-id",
            "ray-docker",
        ]
        proc = run_mimo([*args, *ray_args(ray_test_cluster, "--ray-resources", "CPU=1,docker=1")], env)
    finally:
        ray_test_cluster.remove_worker(node)
    assert proc.returncode == 0, proc.stderr
    records = ResultsStore(out).load()
    assert len(records) == 2 and all(r.passed for r in records.values()), records
    for r in records.values():
        log = (out / r.output_dir / "instance.log").read_text()
        assert f"ran on Ray node {node}" in log and "docker" in log.lower()
    assert docker_client.containers.list(all=True, filters={"label": "mimoagent.run_id=ray-docker"}) == []
