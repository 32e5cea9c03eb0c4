"""End-to-end rollouts through the real CLI, the real SDKs and the scripted server, in the local env."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mimo_core.records.model_calls import read_step, steps
from mimo_core.records.results import ResultsStore
from mimo_core.records.trajectory import read_trajectory
from mimo_core.status import ExitStatus
from testkit.scripted_llm import Reply, call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import SECRET, run_cli

EDIT_THEN_SUBMIT = turns(
    Reply(tool_calls=[("bash", {"command": "cat greeting.txt"})], reasoning="look first"),
    call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"),
    call("submit"),
)


@pytest.mark.parametrize("protocol", ["chat", "responses", "anthropic"])
def test_rollout_edits_file_submits_and_passes(protocol: str, workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(EDIT_THEN_SUBMIT)
    data = write_tasks(workdir)
    cfg = write_config(workdir, f"cfg_{protocol}", protocol=protocol)
    out = workdir / "out"
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm, protocol)
    assert proc.returncode == 0, proc.stderr
    [record] = ResultsStore(out).load().values()
    assert (record.exit_status, record.reward, record.passed, record.steps) == (ExitStatus.SUBMITTED, 1.0, True, 3)
    rollout = out / record.output_dir
    assert {p.name for p in rollout.iterdir()} >= {"instance.log", "traj.json", "agent_msgs", "reward_extra_info.json"}
    traj = read_trajectory(rollout / "traj.json")
    assert traj.model is not None and traj.model.protocol == protocol
    assert (traj.exit_status, traj.agent_exit_status) == (record.exit_status, ExitStatus.SUBMITTED)
    assert "+goodbye" in (traj.submission or "")
    assert [m.role for m in traj.messages][:3] == ["system", "user", "assistant"]
    assert traj.messages[2].reasoning == "look first"
    assert traj.messages[3].role == "tool" and "hello" in (traj.messages[3].content or "")
    assert {t.name for t in traj.tools} >= {"bash", "read", "write", "edit", "submit"}
    on_disk = json.loads((rollout / "traj.json").read_text())  # the documented OpenAI chat format
    assert on_disk["messages"][2]["reasoning_content"] == "look first"
    assert on_disk["messages"][2]["tool_calls"][0]["function"]["name"] == "bash"
    assert {t["function"]["name"] for t in on_disk["tools"]} >= {"bash", "submit"}
    assert len(traj.calls) == 3 and traj.usage.prompt_tokens == 30 and traj.cost > 0
    assert [p.name for p in (rollout / "agent_msgs").iterdir()] == ["steps.jsonl"]
    assert steps(rollout / "agent_msgs") == [1, 2, 3]
    step3 = read_step(rollout / "agent_msgs", 3)
    assert step3.request["model"] == "scripted-model" and step3.response
    assert json.loads((rollout / "reward_extra_info.json").read_text())["reward"] == 1.0
    assert "submitted" in (rollout / "instance.log").read_text()
    assert "pass rate" in proc.stdout and "100.0%" in proc.stdout


def test_api_key_is_sent_but_never_written(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(EDIT_THEN_SUBMIT)
    data = write_tasks(workdir)
    cfg = write_config(workdir, "cfg")
    out = workdir / "out"
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm)
    assert proc.returncode == 0, proc.stderr
    assert any(SECRET in r.headers.get("authorization", "") for r in scripted_llm.requests)
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) >= 6
    leaked = [str(p) for p in files if SECRET in p.read_text(errors="replace")]
    assert leaked == []
    assert SECRET not in proc.stdout + proc.stderr
    saved = json.loads(next(out.rglob("traj.json")).read_text())["config"]
    assert saved["model"]["model_kwargs"]["api_key"] == "***"


def test_num_rollouts_gives_independent_rollout_dirs(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(EDIT_THEN_SUBMIT)
    data = write_tasks(workdir, n=2)
    cfg = write_config(workdir, "cfg")
    out = workdir / "out"
    proc = run_cli(
        ["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--num-rollouts", "3", "--workers", "3"], scripted_llm
    )
    assert proc.returncode == 0, proc.stderr
    records = ResultsStore(out).load()
    assert sorted(records) == [(f"greet-{i}", "cfg", k) for i in range(2) for k in range(3)]
    assert len({r.output_dir for r in records.values()}) == 6
    assert all(r.passed for r in records.values())
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 6


def test_ab_configs_are_assigned_reproducibly_and_recorded(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(EDIT_THEN_SUBMIT)
    data = write_tasks(workdir, n=8)
    a, b = write_config(workdir, "arm_a"), write_config(workdir, "arm_b")
    names = []
    for run in ("one", "two"):
        out = workdir / run
        proc = run_cli(
            ["-c", str(a), "-c", str(b), "--dataset", str(data), "-o", str(out), "--workers", "4"], scripted_llm
        )
        assert proc.returncode == 0, proc.stderr
        recs = ResultsStore(out).load()
        assert len(recs) == 8
        names.append({k[0]: k[1] for k in recs})
        for r in recs.values():
            traj = json.loads((out / r.output_dir / "traj.json").read_text())
            assert traj["config_name"] == r.config_name
    assert names[0] == names[1]
    assert set(names[0].values()) == {"arm_a", "arm_b"}
