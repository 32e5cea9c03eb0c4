"""`--runner ray` on a real multi-node cluster gives what the thread runner gives: the same records,
statuses, rewards and files, one results.jsonl line per rollout, written by the driver alone."""

from __future__ import annotations

import json
from pathlib import Path

from mimo_core.records.results import ResultsStore
from testkit.ray_cluster import RayTestCluster
from tests.core.conftest import REPO
from tests.ray.conftest import ray_args, ray_cli_env, rollout_files, run_mimo

DEMO = [
    "-c",
    str(REPO / "configs/demo.yaml"),
    "--dataset",
    str(REPO / "examples/demo.jsonl"),
    "--recalc-input",
    "gt",
    "--slice",
    "0:4",
    "--num-rollouts",
    "2",
]


def test_ray_run_of_the_demo_matches_the_thread_run(tmp_path: Path, ray_test_cluster: RayTestCluster) -> None:
    env = ray_cli_env(ray_test_cluster)
    threads = run_mimo([*DEMO, "-o", str(tmp_path / "threads"), "--workers", "4"], env)
    assert threads.returncode == 0, threads.stderr
    ray = run_mimo(
        [
            *DEMO,
            "-o",
            str(tmp_path / "ray"),
            "--workers",
            "4",
            *ray_args(ray_test_cluster, "--ray-resources", "CPU=1,memory=64MiB,sandbox=1"),
        ],
        env,
    )
    assert ray.returncode == 0, ray.stderr
    expected, got = ResultsStore(tmp_path / "threads").load(), ResultsStore(tmp_path / "ray").load()
    assert len(expected) == 8 and sorted(got) == sorted(expected)
    for key, rec in expected.items():
        assert (got[key].exit_status, got[key].reward, got[key].passed, got[key].output_dir, got[key].attempts) == (
            rec.exit_status,
            rec.reward,
            rec.passed,
            rec.output_dir,
            rec.attempts,
        )
    assert all(r.passed for r in got.values())
    assert len((tmp_path / "ray" / "results.jsonl").read_text().splitlines()) == 8
    assert rollout_files(tmp_path / "ray") == rollout_files(tmp_path / "threads")
    assert ray.stdout.count("Recalculated - Pass") == 8
    assert ray.stdout.split("results:")[0].splitlines()[-3:] == threads.stdout.split("results:")[0].splitlines()[-3:]
    nodes = {
        line.rsplit(" ", 1)[1]
        for r in got.values()
        for line in (tmp_path / "ray" / r.output_dir / "instance.log").read_text().splitlines()
        if "ran on Ray node" in line
    }
    assert nodes <= set(ray_test_cluster.worker_ids) and len(nodes) >= 2  # rollouts ran on several nodes
    assert not list((tmp_path / "ray").rglob("*.attempt-*"))
    # Nothing of the run was written under -o by the workers: their scratch folders are gone too.
    for rec in got.values():
        traj = json.loads((tmp_path / "ray" / rec.output_dir / "traj.json").read_text())
        assert traj["exit_status"] == "recalculated"


def test_a_request_no_node_can_hold_is_a_one_line_error(tmp_path: Path, ray_test_cluster: RayTestCluster) -> None:
    proc = run_mimo(
        [*DEMO, "-o", str(tmp_path / "out"), *ray_args(ray_test_cluster, "--ray-resources", "CPU=1,sandbox=3")],
        ray_cli_env(ray_test_cluster),
    )
    assert proc.returncode == 2, proc.stderr
    assert "no node of the Ray cluster can hold one rollout (CPU=1, sandbox=3)" in proc.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_bad_ray_flags_are_one_line_errors(tmp_path: Path) -> None:
    cases = [
        (["--ray-address", "127.0.0.1:1"], "--ray-address and --ray-resources need --runner ray"),
        (["--runner", "ray", "--ray-resources", "CPU=x"], "--ray-resources: CPU='x' is not a number"),
        (["--runner", "ray", "--ray-resources", "sandbox"], "is not NAME=VALUE"),
    ]
    for extra, message in cases:
        proc = run_mimo([*DEMO, "-o", str(tmp_path / "out"), *extra], {"PATH": "/usr/bin:/bin"})
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
