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
    return out, ResultsStore(out).load(), done


def test_64_workers_against_8_allowed_keep_8_in_flight_and_record_the_waits(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    scripted_llm.latency = 0.05
    limits = scripted_llm.rate_limit(max_concurrency=8)
    out, records, done = _run(workdir, scripted_llm, "chat", max_concurrency=8)
    assert len(records) == TASKS and all(r.passed for r in records.values())
    assert limits.refused == 0 and limits.max_seen <= 8 and limits.admitted == 2 * TASKS
    waited = [r for r in records.values() if r.budget_wait_s > 0]
    assert waited, "64 rollouts sharing 8 slots: some waited"
    some = waited[0]
    traj = json.loads((out / some.output_dir / "traj.json").read_text())
    assert traj["timings"]["budget_wait_s"] == some.budget_wait_s
    assert sum(c["wait_s"] for c in traj["calls"]) == pytest.approx(some.budget_wait_s, abs=0.01)
    # the progress line says why the run is slow: the endpoint, in flight / its limit, waits, overloads
    host = scripted_llm.url.removeprefix("http://")
    last = done.stderr.strip().splitlines()[-1]
    assert f"{host}/scripted-model: 0/8 in flight, 0 waiting, " in last and " 0 overloaded" in last
    waited_calls = int(last.split(" waiting, ")[1].split(" waited")[0])
    assert waited_calls > 0
    cost = sum(r.cost for r in records.values())
    assert (
        f"run total: {TASKS} rollouts · {sum(r.prompt_tokens + r.completion_tokens for r in records.values()):,}"
        in (done.stdout)
    )
    assert f"cost ${cost:.4f}" in done.stdout


def test_the_adaptive_default_against_an_overloaded_endpoint_fails_no_rollout(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    scripted_llm.latency = 0.05
    limits = scripted_llm.rate_limit(max_concurrency=8, style="anthropic")  # 529 overloaded_error past 8
    _, records, done = _run(workdir, scripted_llm, "anthropic")
    assert len(records) == TASKS and all(r.passed for r in records.values()), {r.exit_status for r in records.values()}
    assert limits.max_seen <= 8 and limits.admitted == 2 * TASKS
    assert "adaptive in flight" in done.stderr
    if limits.refused:  # every 529 was seen as an overload
        assert f"{limits.refused} overloaded" in done.stderr.strip().splitlines()[-1]
