"""Resume: finished rollouts are kept and skipped, infra errors are rerun, SIGKILL loses nothing finished."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mimo_core.records.results import ResultsStore
from mimo_core.status import ExitStatus
from testkit.scripted_llm import call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import REPO, SECRET, base_url, run_cli

SOLVE = turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))


def _cli(data: Path, cfg: Path, out: Path, *extra: str) -> list[str]:
    return ["-c", str(cfg), "--dataset", str(data), "-o", str(out), *extra]


def test_rerun_skips_finished_and_redo_existing_reruns(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    data, cfg, out = write_tasks(workdir, n=3), write_config(workdir, "cfg"), workdir / "out"
    assert run_cli(_cli(data, cfg, out), scripted_llm).returncode == 0
    first = ResultsStore(out).load()
    n_requests = len(scripted_llm.requests)
    proc = run_cli(_cli(data, cfg, out), scripted_llm)
    assert proc.returncode == 0 and "0 rollouts to run" in proc.stderr
    assert len(scripted_llm.requests) == n_requests
    assert ResultsStore(out).load() == first
    proc = run_cli(_cli(data, cfg, out, "--redo-existing"), scripted_llm)
    assert proc.returncode == 0
    again = ResultsStore(out).load()
    assert len(scripted_llm.requests) == 2 * n_requests
    assert sorted(again) == sorted(first) and {r.run_id for r in again.values()} != {r.run_id for r in first.values()}
    assert len((out / "results.jsonl").read_text().splitlines()) == 3  # replaced, not duplicated


def test_infra_errors_are_rerun_on_resume(workdir: Path, scripted_llm) -> None:
    data, cfg, out = write_tasks(workdir, n=2), write_config(workdir, "cfg"), workdir / "out"
    scripted_llm.inject(503, times=3)  # exhausts the first rollout's 3 attempts
    scripted_llm.set_responder(SOLVE)
    assert run_cli(_cli(data, cfg, out), scripted_llm).returncode == 0
    recs = ResultsStore(out).load()
    assert sorted(r.exit_status for r in recs.values()) == [ExitStatus.MODEL_ERROR, ExitStatus.SUBMITTED]
    proc = run_cli(_cli(data, cfg, out), scripted_llm)
    assert "1 rollouts to run" in proc.stderr
    recs = ResultsStore(out).load()
    assert [r.exit_status for r in recs.values()] == [ExitStatus.SUBMITTED, ExitStatus.SUBMITTED]


def test_sigkill_loses_no_finished_rollout(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    scripted_llm.latency = 0.3  # 12 rollouts of 2 calls on 2 workers: ~4 s, the kill lands at ~1.5 s
    data, cfg, out = write_tasks(workdir, n=12), write_config(workdir, "cfg"), workdir / "out"
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": base_url(scripted_llm, "chat"),
        "MIMO_TEST_API_KEY": SECRET,
        "MIMOAGENT_OBSERVERS": "0",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "mimo_core.cli", *_cli(data, cfg, out, "--workers", "2")],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    results = out / "results.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not results.exists() or len(results.read_text().splitlines()) < 2):
        time.sleep(0.05)
    time.sleep(0.2)  # land the kill mid-rollout
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    survived = ResultsStore(out).load()
    assert 2 <= len(survived) < 12
    for rec in survived.values():  # every record points at complete files
        assert (out / rec.output_dir / "traj.json").exists()
        assert (out / rec.output_dir / "reward_extra_info.json").exists()
    scripted_llm.latency = 0.0
    done = run_cli(_cli(data, cfg, out), scripted_llm)
    assert f"{12 - len(survived)} rollouts to run" in done.stderr
    final = ResultsStore(out).load()
    assert len(final) == 12 and all(r.passed for r in final.values())
    assert all(final[k] == v for k, v in survived.items())
    assert len(results.read_text().splitlines()) == 12


def test_sigterm_stops_cleanly_and_resume_finishes(workdir: Path, scripted_llm) -> None:
    import yaml

    scripted_llm.set_responder(
        turns(
            call("bash", command="true"),
            call("bash", command="true"),
            call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"),
            call("submit"),
        )
    )
    scripted_llm.latency = 0.2
    data, cfg, out = write_tasks(workdir, n=4), write_config(workdir, "cfg"), workdir / "out"
    sandboxes = workdir / "sandboxes"
    sandboxes.mkdir()
    doc = yaml.safe_load(cfg.read_text())
    doc["environment"]["backend_kwargs"] = {"root": str(sandboxes)}
    cfg.write_text(yaml.safe_dump(doc))
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": base_url(scripted_llm, "chat"),
        "MIMO_TEST_API_KEY": SECRET,
        "MIMOAGENT_OBSERVERS": "0",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "mimo_core.cli", *_cli(data, cfg, out, "--workers", "2")],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(scripted_llm.requests) < 2:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    interrupted = [r for r in ResultsStore(out).load().values() if r.exit_status == ExitStatus.INTERRUPTED]
    assert interrupted and all(r.infra_error for r in interrupted)
    assert list(sandboxes.iterdir()) == []  # every sandbox of the stopped rollouts was removed
    scripted_llm.latency = 0.0
    assert run_cli(_cli(data, cfg, out), scripted_llm).returncode == 0
    final = ResultsStore(out).load()
    assert len(final) == 4 and all(r.passed for r in final.values())


def test_a_killed_redo_keeps_the_finished_rollout(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    data, cfg, out = write_tasks(workdir, n=1), write_config(workdir, "cfg"), workdir / "out"
    assert run_cli(_cli(data, cfg, out), scripted_llm).returncode == 0
    [before] = ResultsStore(out).load().values()
    traj = (out / before.output_dir / "traj.json").read_text()
    scripted_llm.set_responder(turns(call("bash", command="true")))  # the redo never finishes by itself
    scripted_llm.latency = 0.1
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": base_url(scripted_llm, "chat"),
        "MIMO_TEST_API_KEY": SECRET,
        "MIMOAGENT_OBSERVERS": "0",
    }
    n0 = len(scripted_llm.requests)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mimo_core.cli", *_cli(data, cfg, out, "--redo-existing")],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(scripted_llm.requests) < n0 + 3:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert ResultsStore(out).load() == {before.key: before}
    assert (out / before.output_dir / "traj.json").read_text() == traj
    scripted_llm.latency = 0.0
    again = run_cli(_cli(data, cfg, out), scripted_llm)
    assert "0 rollouts to run" in again.stderr


NOTICE = "finished rollout(s) ran with a config, row or repository that has changed since"


def test_resume_says_once_how_many_finished_rollouts_no_longer_match_their_input(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    data, cfg, out = write_tasks(workdir, n=3), write_config(workdir, "cfg"), workdir / "out"
    assert run_cli(_cli(data, cfg, out), scripted_llm).returncode == 0
    proc = run_cli(_cli(data, cfg, out), scripted_llm)
    assert "0 rollouts to run" in proc.stderr and NOTICE not in proc.stderr
    rows = data.read_text().splitlines()  # one row's statement changes
    data.write_text("\n".join([rows[0].replace("(task 0)", "(task zero)"), *rows[1:]]) + "\n")
    proc = run_cli(_cli(data, cfg, out), scripted_llm)
    assert "0 rollouts to run" in proc.stderr and proc.stderr.count(NOTICE) == 1, proc.stderr
    assert f"1 {NOTICE}" in proc.stderr and "--rerun-changed runs them again" in proc.stderr
    (workdir / "repo" / "greeting.txt").write_text("hello there\n")  # the repository all rows share
    proc = run_cli(_cli(data, cfg, out), scripted_llm)
    assert f"3 {NOTICE}" in proc.stderr, proc.stderr
    cfg.write_text(cfg.read_text().replace("step_limit: 10", "step_limit: 11"))  # and the config
    proc = run_cli(_cli(data, cfg, out), scripted_llm)
    assert f"3 {NOTICE}" in proc.stderr, proc.stderr
    before = ResultsStore(out).load()
    proc = run_cli(_cli(data, cfg, out, "--rerun-changed"), scripted_llm)
    assert proc.returncode == 0 and "3 rollouts to run" in proc.stderr and NOTICE not in proc.stderr, proc.stderr
    after = ResultsStore(out).load()
    assert {r.run_id for r in after.values()}.isdisjoint(r.run_id for r in before.values())
    proc = run_cli(_cli(data, cfg, out), scripted_llm)
    assert "0 rollouts to run" in proc.stderr and NOTICE not in proc.stderr
