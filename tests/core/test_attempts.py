"""Evidence survives a retry: the failed attempt's trajectory and log stay in attempts/<n>/."""

from __future__ import annotations

import json
from pathlib import Path

from mimo_core.records.results import ResultsStore
from testkit.scripted_llm import call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import run_cli

SOLVE = turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))


def test_a_resume_keeps_each_failed_attempt_and_counts_them(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    data, cfg, out = write_tasks(workdir), write_config(workdir, "cfg"), workdir / "out"
    args = ["-c", str(cfg), "--dataset", str(data), "-o", str(out)]
    for _ in range(2):  # two runs whose every call fails
        scripted_llm.inject(503, times=3, body={"error": {"message": "overloaded, try later"}})
        assert run_cli(args, scripted_llm).returncode == 3
    done = run_cli(args, scripted_llm)
    assert done.returncode == 0, done.stderr
    [rec] = ResultsStore(out).load().values()
    assert (rec.exit_status, rec.passed, rec.attempts) == ("submitted", True, 3)
    assert len((out / "results.jsonl").read_text().splitlines()) == 1
    kept = out / rec.output_dir / "attempts"
    assert sorted(p.name for p in kept.iterdir()) == ["1", "2"]
    for n in ("1", "2"):
        traj = json.loads((kept / n / "traj.json").read_text())
        assert traj["exit_status"] == "model_error" and "overloaded" in (traj["error"] or "")
        assert "model_error" in (kept / n / "instance.log").read_text()
    assert (out / rec.output_dir / "traj.json").exists()


def test_a_redo_of_a_finished_rollout_is_not_an_attempt(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    data, cfg, out = write_tasks(workdir), write_config(workdir, "cfg"), workdir / "out"
    args = ["-c", str(cfg), "--dataset", str(data), "-o", str(out)]
    assert run_cli(args, scripted_llm).returncode == 0
    assert run_cli([*args, "--redo-existing"], scripted_llm).returncode == 0
    [rec] = ResultsStore(out).load().values()
    assert rec.attempts == 1 and not (out / rec.output_dir / "attempts").exists()
