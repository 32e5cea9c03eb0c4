"""Faults under `--runner ray`: a worker node lost mid-run, the driver SIGKILLed, Ctrl-C/SIGTERM."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import yaml

from mimo_core.records.results import ResultsStore
from testkit.ray_cluster import RayTestCluster
from testkit.scripted_llm import call, turns
from testkit.tasks import write_config, write_tasks
from tests.ray.conftest import ray_args, ray_cli_env, run_mimo, start_mimo

SOLVE = turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))


def _setup(tmp_path: Path, n: int) -> tuple[list[str], Path, Path]:
    data, cfg, out = write_tasks(tmp_path, n=n), write_config(tmp_path, "cfg"), tmp_path / "out"
    sandboxes = tmp_path / "sandboxes"
    sandboxes.mkdir()
    doc = yaml.safe_load(cfg.read_text())
    doc["environment"]["backend_kwargs"] = {"root": str(sandboxes)}
    doc["environment"]["timeout"] = 120
    cfg.write_text(yaml.safe_dump(doc))
    return ["-c", str(cfg), "--dataset", str(data), "-o", str(out)], out, sandboxes


def _wait(predicate, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _lines(out: Path) -> list[str]:
    path = out / "results.jsonl"
    return path.read_text().splitlines() if path.exists() else []


def test_a_lost_worker_node_is_retried_elsewhere(
    tmp_path: Path,
    ray_test_cluster: RayTestCluster,
    scripted_llm,
) -> None:
    """Six rollouts fill the six CPUs of three worker nodes; one node dies with two of them running: they
    run again on the others, and every rollout is recorded exactly once."""
    assert len(ray_test_cluster.worker_ids) == 3
    doomed = ray_test_cluster.worker_ids[-1]
    scripted_llm.set_responder(SOLVE)
    scripted_llm.latency = 1.0  # each rollout takes ~2 s of model calls: the removal lands mid-rollout
    args, out, _ = _setup(tmp_path, n=6)
    env = ray_cli_env(ray_test_cluster, scripted_llm)
    proc = start_mimo([*args, "--workers", "6", *ray_args(ray_test_cluster)], env)
    try:
        _wait(lambda: len(scripted_llm.requests) >= 6)  # every rollout has made its first call
        ray_test_cluster.remove_worker(doomed)
        _, err = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    records = ResultsStore(out).load()
    assert len(records) == 6 and all(r.passed for r in records.values()), err
    assert len(_lines(out)) == 6  # none recorded twice
    assert len(scripted_llm.requests) > 12  # the lost node's rollouts ran again (2 calls each when run once)
    for r in records.values():
        log = (out / r.output_dir / "instance.log").read_text()
        assert doomed not in log and "ran on Ray node" in log


def test_driver_sigkill_then_rerun_resumes(tmp_path: Path, ray_test_cluster: RayTestCluster, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    scripted_llm.latency = 0.2
    args, out, _ = _setup(tmp_path, n=6)
    env = ray_cli_env(ray_test_cluster, scripted_llm)
    proc = start_mimo([*args, "--workers", "2", *ray_args(ray_test_cluster)], env)
    _wait(lambda: len(_lines(out)) >= 2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    survived = ResultsStore(out).load()
    assert 2 <= len(survived) < 6
    for rec in survived.values():  # every record points at complete files
        assert (out / rec.output_dir / "traj.json").exists()
    scripted_llm.latency = 0.0
    done = run_mimo([*args, "--workers", "4", *ray_args(ray_test_cluster)], env)
    assert done.returncode == 0, done.stderr
    assert f"{6 - len(survived)} rollouts to run" in done.stderr
    final = ResultsStore(out).load()
    assert len(final) == 6 and all(r.passed for r in final.values())
    assert len(_lines(out)) == 6
    for key, rec in survived.items():  # finished rollouts were kept, not redone
        assert final[key].run_id == rec.run_id and final[key].started_at == rec.started_at


def test_sigterm_cancels_the_cluster_tasks_and_removes_their_sandboxes(
    tmp_path: Path,
    ray_test_cluster: RayTestCluster,
    scripted_llm,
) -> None:
    scripted_llm.set_responder(turns(call("bash", command="sleep 60"), call("submit")))
    args, out, sandboxes = _setup(tmp_path, n=3)
    env = ray_cli_env(ray_test_cluster, scripted_llm)
    proc = start_mimo([*args, "--workers", "3", *ray_args(ray_test_cluster)], env)
    _wait(lambda: len(scripted_llm.requests) >= 3 and len(list(sandboxes.iterdir())) == 3)
    time.sleep(0.5)  # the sleeps are running now
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err
    assert time.monotonic() - start < 30, err
    assert list(sandboxes.iterdir()) == []  # every sandbox removed on its node before the driver exited
    assert _lines(out) == []  # cancelled rollouts are not recorded: a rerun does them
    assert "rerun the command to resume" in err
