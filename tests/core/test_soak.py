"""A bounded soak: 300 rollouts, about 30 % of model requests failing (500, 429, HTML 200, hangs past the
timeout), then a resume. Nothing is lost, duplicated or torn; no sandbox is left behind."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from mimo_core.records.results import ResultsStore
from testkit.scripted_llm import call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import run_cli

SOLVE = turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))
TASKS, K = 100, 3


def test_soak_with_injected_faults_loses_duplicates_and_tears_nothing(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    scripted_llm.chaos(0.3, seed=16, hang_s=1.0)
    data, cfg, out = write_tasks(workdir, n=TASKS), write_config(workdir, "cfg"), workdir / "out"
    sandboxes = workdir / "sandboxes"
    sandboxes.mkdir()
    doc = yaml.safe_load(cfg.read_text())
    doc["environment"]["backend_kwargs"] = {"root": str(sandboxes)}
    doc["model"]["retry"] = {"max_attempts": 2, "initial_delay": 0.0, "max_delay": 0.01, "timeout": 0.5}
    cfg.write_text(yaml.safe_dump(doc))
    args = ["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--num-rollouts", str(K), "--workers", "8"]

    faulty = run_cli(args, scripted_llm, timeout=110)
    assert faulty.returncode == 0, faulty.stderr[-2000:]
    first = ResultsStore(out).load()
    failed = {k for k, r in first.items() if r.infra_error}
    assert len(first) == TASKS * K and failed, "the fault mix should leave some rollouts to redo"
    assert {r.exit_status for k, r in first.items() if k in failed} == {"model_error"}

    scripted_llm.chaos(0.0)
    resumed = run_cli(args, scripted_llm, timeout=110)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"{len(failed)} rollouts to run" in resumed.stderr

    lines = (out / "results.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]  # no torn line
    keys = [(r["instance_id"], r["config_name"], r["rollout_index"]) for r in records]
    assert len(keys) == len(set(keys)) == TASKS * K  # nothing lost, nothing twice
    final = ResultsStore(out).load()
    assert all(r.passed for r in final.values())
    for key, rec in final.items():
        assert (out / rec.output_dir / "traj.json").exists()
        if key in failed:  # the failed attempt's evidence is still there
            assert rec.attempts == 2 and (out / rec.output_dir / "attempts" / "1" / "traj.json").exists()
        else:
            assert rec.attempts == 1 and first[key] == rec
    assert list(sandboxes.iterdir()) == []
