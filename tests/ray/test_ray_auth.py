"""A Ray cluster that needs token authentication: a driver without its token gets one line that says so,
not twenty seconds of Ray's own retry warnings and "cannot join"."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from testkit.ray_cluster import RayTestCluster
from testkit.tasks import write_config, write_tasks
from tests.ray.conftest import ray_args, ray_cli_env, run_mimo


def test_a_cluster_that_needs_a_token_says_so(tmp_path: Path, scripted_llm) -> None:
    token = secrets.token_hex(16)
    cluster = RayTestCluster(
        workers=0, head_cpus=1, cluster_env={"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
    ).start()
    try:
        data, cfg = write_tasks(tmp_path), write_config(tmp_path, "cfg")
        env = {k: v for k, v in ray_cli_env(cluster, scripted_llm).items() if not k.startswith("RAY_AUTH")}
        proc = run_mimo(["-c", str(cfg), "--dataset", str(data), "-o", str(tmp_path / "out"), *ray_args(cluster)], env)
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert f"--ray-address {cluster.address}: the Ray cluster needs token authentication" in proc.stderr
        assert "set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN" in proc.stderr and token not in proc.stderr
        assert "InvalidAuthToken" not in proc.stderr  # Ray's own retry warnings stay out of the way
        assert scripted_llm.requests == []
    finally:
        cluster.stop()
    assert os.environ.get("RAY_AUTH_TOKEN") != token
