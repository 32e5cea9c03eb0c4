"""Grading without a model: recalc from the reference or a saved run, the oracle agent; and the judge."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from mimo_core.records.results import ResultsStore
from mimo_core.records.trajectory import Trajectory
from mimo_core.status import ExitStatus
from testkit.scripted_llm import Reply, call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import REPO, run_cli

DEMO = REPO / "examples" / "demo.jsonl"


def test_recalc_gt_passes_every_demo_instance(tmp_path: Path, scripted_llm) -> None:
    out = tmp_path / "demo"
    proc = run_cli(
        ["-c", str(REPO / "configs/demo.yaml"), "--dataset", str(DEMO), "--recalc-input", "gt", "-o", str(out)],
        scripted_llm,
    )
    assert proc.returncode == 0, proc.stderr
    n_rows = len(DEMO.read_text().splitlines())
    assert n_rows >= 5
    assert proc.stdout.count("Recalculated - Pass") == n_rows, proc.stdout
    records = ResultsStore(out).load().values()
    assert {r.recalc for r in records} == {"gt"} and all(r.reward == 1.0 for r in records)
    assert {r.exit_status for r in records} == {ExitStatus.RECALCULATED}
    assert scripted_llm.requests == []  # no model was called


def test_recalc_from_dir_regrades_saved_submissions(tmp_path: Path, scripted_llm) -> None:
    data = write_tasks(tmp_path, n=2)
    cfg = write_config(tmp_path, "cfg")
    scripted_llm.set_responder(
        turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))
    )
    first = tmp_path / "first"
    assert run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(first)], scripted_llm).returncode == 0
    # break one saved submission by hand, as if the agent had written something else
    rec = ResultsStore(first).load()[("greet-1", "cfg", 0)]
    traj_path = first / rec.output_dir / "traj.json"
    traj = json.loads(traj_path.read_text())
    traj["submission"] = traj["submission"].replace("+goodbye", "+hello again")
    traj_path.write_text(json.dumps(traj))
    n_requests = len(scripted_llm.requests)
    second = tmp_path / "second"
    proc = run_cli(
        ["-c", str(cfg), "--dataset", str(data), "--recalc-input", str(first), "-o", str(second)], scripted_llm
    )
    assert proc.returncode == 0, proc.stderr
    assert len(scripted_llm.requests) == n_requests
    assert "greet-0 [cfg#0]: Recalculated - Pass" in proc.stdout
    assert "greet-1 [cfg#0]: Recalculated - Fail" in proc.stdout
    regraded = ResultsStore(second).load()
    assert regraded[("greet-1", "cfg", 0)].recalc == str(first)
    # the run that was regraded is untouched
    assert ResultsStore(first).load()[("greet-0", "cfg", 0)].passed is True


def test_recalc_into_its_own_source_is_refused(tmp_path: Path, scripted_llm) -> None:
    data, cfg = write_tasks(tmp_path), write_config(tmp_path, "cfg")
    scripted_llm.set_responder(turns(call("submit")))
    out = tmp_path / "out"
    assert run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm).returncode == 0
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "--recalc-input", str(out), "-o", str(out)], scripted_llm)
    assert proc.returncode == 2 and "must differ from -o" in proc.stderr


def test_oracle_agent_runs_the_reference_solution_as_a_rollout(tmp_path: Path, scripted_llm) -> None:
    out = tmp_path / "oracle"
    proc = run_cli(
        ["-c", str(REPO / "configs/oracle.yaml"), "--dataset", str(DEMO), "--slice", "0:3", "-o", str(out)],
        scripted_llm,
    )
    assert proc.returncode == 0, proc.stderr
    records = list(ResultsStore(out).load().values())
    assert len(records) == 3 and all(r.passed for r in records)
    for r in records:
        traj = json.loads((out / r.output_dir / "traj.json").read_text())
        assert traj["agent_type"] == "oracle" and traj["messages"] and traj["submission"]


def test_rubric_judge_scores_before_the_verifier(tmp_path: Path, scripted_llm) -> None:
    data = write_tasks(tmp_path)
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    rows[0]["rubric"] = {"rubrics": ["greeting.txt says goodbye", "nothing else changed"]}
    data.write_text(json.dumps(rows[0]) + "\n")
    cfg_path = write_config(tmp_path, "judged")
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["environment"]["judge_agent"] = {"agent": {"type": "judge", "step_limit": 5}, "model": cfg["model"]}
    cfg_path.write_text(yaml.safe_dump(cfg))
    verdict = json.dumps(
        {"scores": [{"index": 1, "score": 1.0, "reason": "it does"}, {"index": 2, "score": 0.5, "reason": "mostly"}]}
    )
    agent = turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))
    judge = turns(Reply(tool_calls=[("bash", {"command": "git diff"})]), call("submit", message=verdict))

    def responder(req):
        system = json.dumps(req.body.get("messages", [])[:1])
        return judge(req) if "reviewer" in system else agent(req)

    scripted_llm.set_responder(responder)
    out = tmp_path / "out"
    proc = run_cli(["-c", str(cfg_path), "--dataset", str(data), "-o", str(out)], scripted_llm)
    assert proc.returncode == 0, proc.stderr
    [rec] = ResultsStore(out).load().values()
    assert rec.passed is True and rec.judge_score == 0.75
    extra = json.loads((out / rec.output_dir / "reward_extra_info.json").read_text())
    assert [s["score"] for s in extra["judge"]["scores"]] == [1.0, 0.5]
    assert extra["judge"]["scores"][0]["reason"] == "it does"
    judge_traj = Trajectory.model_validate_json((out / rec.output_dir / "judge" / "traj.json").read_text())
    assert (judge_traj.agent_type, judge_traj.steps, judge_traj.config_name) == ("judge", 2, "judged")
    assert judge_traj.submission == verdict and judge_traj.config["model"]["model_kwargs"]["api_key"] == "***"
