"""`--retries`: a rollout that ended in an infrastructure error runs again within the same run, its failed
attempts kept; an agent's failure is never retried. The run's `cost_limit` stops starting rollouts."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from mimo_core.records.results import ResultsStore
from mimo_core.run.batch import RETRIED_STATUSES
from testkit.scripted_llm import Reply, Request, call
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import run_cli

STEPS = (call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))


def _solve_but_task_0(req: Request) -> Reply:
    """Every task is solved in two steps but greet-0, whose model never calls a tool (format_errors)."""
    if "(task 0)" in json.dumps(req.body):
        return Reply(content="I will not use tools.")
    return STEPS[min(req.n_assistant_turns, 1)]


def _config(workdir: Path, **top: object) -> Path:
    cfg = write_config(workdir, "cfg", max_format_errors=1)
    doc = yaml.safe_load(cfg.read_text())
    doc["model"]["retry"] = {"max_attempts": 1, "initial_delay": 0.0, "max_delay": 0.01, "timeout": 10}
    doc.update(top)
    cfg.write_text(yaml.safe_dump(doc))
    return cfg


def test_retries_recover_a_flaky_endpoint_and_never_retry_the_agents_failure(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(_solve_but_task_0)
    limits = scripted_llm.rate_limit()
    limits.fail(rate=0.4, calls=40, seed=3)  # 500s for a while, then a healthy endpoint
    data, out = write_tasks(workdir, n=12), workdir / "out"
    args = ["-c", str(_config(workdir)), "--dataset", str(data), "-o", str(out), "--workers", "4"]
    done = run_cli([*args, "--retries", "6", "--retry-delay", "0.05"], scripted_llm)
    assert done.returncode == 0, done.stderr[-3000:]
    records = ResultsStore(out).load()
    assert limits.failed > 0 and len(records) == 12
    assert records[("greet-0", "cfg", 0)].exit_status == "format_errors"
    assert all(r.passed for k, r in records.items() if k[0] != "greet-0")
    retried = 0
    for rec in records.values():
        kept = sorted((out / rec.output_dir / "attempts").glob("*/traj.json"))
        assert rec.attempts == len(kept) + 1  # the record says how many attempts it took
        for path in kept:  # each kept attempt failed through the machinery, never through the agent
            assert json.loads(path.read_text())["exit_status"] in RETRIED_STATUSES
        retried += bool(kept)
    assert retried > 0, "with 40 % of the first calls failing, some rollouts took more than one attempt"


def test_without_retries_the_failures_stay_for_a_resume(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(_solve_but_task_0)
    scripted_llm.rate_limit().fail(rate=1.0, calls=2)
    data, out = write_tasks(workdir, n=3), workdir / "out"
    args = ["-c", str(_config(workdir)), "--dataset", str(data), "-o", str(out), "--workers", "1"]
    assert run_cli(args, scripted_llm).returncode == 0
    statuses = sorted(r.exit_status for r in ResultsStore(out).load().values())
    assert statuses.count("model_error") == 2 and all(r.attempts == 1 for r in ResultsStore(out).load().values())


def test_the_runs_cost_limit_stops_starting_rollouts_and_says_so(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(lambda req: STEPS[min(req.n_assistant_turns, 1)])
    # each rollout: 2 calls of 10 prompt and 5 completion tokens at $1 / $2 per million = $0.00004
    data, out = write_tasks(workdir, n=10), workdir / "out"
    cfg = _config(workdir, cost_limit=0.0001)
    done = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--workers", "1"], scripted_llm)
    assert done.returncode == 0, done.stderr[-3000:]
    records = ResultsStore(out).load()
    assert len(records) == 3 and sum(r.cost for r in records.values()) >= 0.0001
    assert "cost_limit $0.0001 reached ($0.00012 spent): 7 rollout(s) not started; a resume runs them" in done.stderr
