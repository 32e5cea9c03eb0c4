"""Many workers, one endpoint that allows few: the run's one budget per endpoint (models/endpoint_budget.py)
keeps within it, through the real CLI and the real SDKs, and records the waits (traj.json, results.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mimo_core.records.results import ResultsStore
from testkit.scripted_llm import call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import run_cli

SOLVE = turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))
TASKS = 64


def _run(workdir: Path, server, protocol: str, **model: object):
    data, cfg, out = write_tasks(workdir, n=TASKS), write_config(workdir, "cfg", protocol=protocol), workdir / "out"
    doc = yaml.safe_load(cfg.read_text())
    doc["model"].update(model)
    doc["model"]["retry"] = {"max_attempts": 6, "initial_delay": 0.01, "max_delay": 0.1, "timeout": 10}
    cfg.write_text(yaml.safe_dump(doc))
    args = ["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--workers", "64"]
    done = run_cli(args, server, protocol=protocol, timeout=150)
    assert done.returncode == 0, done.stderr[-3000:]
    return out, ResultsStore(out).load()


def test_64_workers_against_8_allowed_keep_8_in_flight_and_record_the_waits(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    scripted_llm.latency = 0.05
    limits = scripted_llm.rate_limit(max_concurrency=8)
    out, records = _run(workdir, scripted_llm, "chat", max_concurrency=8)
    assert len(records) == TASKS and all(r.passed for r in records.values())
    assert limits.refused == 0 and limits.max_seen <= 8 and limits.admitted == 2 * TASKS
    waited = [r for r in records.values() if r.budget_wait_s > 0]
    assert waited, "64 rollouts sharing 8 slots: some waited"
    some = waited[0]
    traj = json.loads((out / some.output_dir / "traj.json").read_text())
    assert traj["timings"]["budget_wait_s"] == some.budget_wait_s
    assert sum(c["wait_s"] for c in traj["calls"]) == pytest.approx(some.budget_wait_s, abs=0.01)


def test_the_adaptive_default_against_an_overloaded_endpoint_fails_no_rollout(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    scripted_llm.latency = 0.05
    limits = scripted_llm.rate_limit(max_concurrency=8, style="anthropic")  # 529 overloaded_error past 8
    _, records = _run(workdir, scripted_llm, "anthropic")
    assert len(records) == TASKS and all(r.passed for r in records.values()), {r.exit_status for r in records.values()}
    assert limits.max_seen <= 8 and limits.admitted == 2 * TASKS
