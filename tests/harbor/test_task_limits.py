"""The task's own agent timeout (Harbor `[agent].timeout_sec`) ends the agent with `time_limit`, and the
rollout is still graded, on what was committed."""

from __future__ import annotations

import json
from pathlib import Path

from testkit.scripted_llm import call, turns
from tests.harbor.conftest import write_harbor_config, write_harbor_task, write_rows

GIT = "git -c user.name=agent -c user.email=agent@example.com"
COMMIT_THEN_KEEP_WORKING = turns(
    call("bash", command=f"echo goodbye > greeting.txt && {GIT} commit -qam fix"),
    call("bash", command="sleep 0.3; echo hello again > greeting.txt"),  # repeated: never submits
)


def test_task_agent_timeout_ends_the_agent_and_the_committed_state_is_graded(
    tmp_path: Path, scripted_llm, run_rollout
) -> None:
    scripted_llm.set_responder(COMMIT_THEN_KEEP_WORKING)
    rows = write_rows(tmp_path, write_harbor_task(tmp_path / "tasks", agent_timeout=3))
    record, rollout = run_rollout(rows, write_harbor_config(tmp_path, agent={"step_limit": 500}))
    assert record.exit_status == "time_limit" and record.infra_error is False
    assert 2 <= record.steps < 40  # it kept working after its commit, until the task's limit
    assert (record.reward, record.passed) == (1.0, True)  # the commit, not the later uncommitted edit
    assert record.grading["uncommitted_files"] == 1
    assert "agent time limit: 3s" in (rollout / "instance.log").read_text()


def test_a_command_still_running_at_the_task_timeout_is_stopped_there(
    tmp_path: Path, scripted_llm, run_rollout
) -> None:
    scripted_llm.set_responder(
        turns(
            call("bash", command=f"echo goodbye > greeting.txt && {GIT} commit -qam fix"),
            call("bash", command="sleep 60"),
        )
    )
    rows = write_rows(tmp_path, write_harbor_task(tmp_path / "tasks", agent_timeout=2))
    record, _ = run_rollout(
        rows,
        write_harbor_config(
            tmp_path, agent={"step_limit": 500, "tools": [{"tool": "bash", "config": {"timeout": 120}}]}
        ),
    )
    assert record.exit_status == "time_limit" and record.reward == 1.0
    assert record.duration_s < 30  # not the 60 s command, nor its 120 s tool timeout


def test_a_stricter_config_time_limit_wins_over_the_tasks(tmp_path: Path, scripted_llm, run_rollout) -> None:
    scripted_llm.set_responder(COMMIT_THEN_KEEP_WORKING)
    rows = write_rows(tmp_path, write_harbor_task(tmp_path / "tasks", agent_timeout=600))
    record, rollout = run_rollout(rows, write_harbor_config(tmp_path, agent={"step_limit": 500, "time_limit": 1.0}))
    assert record.exit_status == "time_limit" and record.duration_s < 60
    assert "agent time limit" not in (rollout / "instance.log").read_text()


def test_converted_rows_carry_the_tasks_timeouts(tmp_path: Path) -> None:
    [row] = [
        json.loads(line)
        for line in write_rows(tmp_path, write_harbor_task(tmp_path / "tasks", agent_timeout=42))
        .read_text()
        .splitlines()
    ]
    assert (row["agent_timeout_sec"], row["verifier_timeout_sec"], row["build_timeout_sec"]) == (42.0, 60.0, 300.0)
    assert row["collect"][0]["timeout_sec"] == 30.0


def test_the_reference_solution_runs_with_the_tasks_solution_env_and_is_committed(tmp_path: Path, run_rollout) -> None:
    rows = write_rows(tmp_path, write_harbor_task(tmp_path / "tasks"))
    record, rollout = run_rollout(rows, write_harbor_config(tmp_path), recalc="gt")
    assert (record.exit_status, record.reward) == ("recalculated", 1.0)  # strict: the hook saw the commit
    assert "+goodbye" in json.loads((rollout / "traj.json").read_text())["submission"]


def test_the_tasks_verifier_timeout_stops_a_hanging_verifier_as_a_grading_error(tmp_path: Path, run_rollout) -> None:
    """Harbor `[verifier].timeout_sec` bounds the verifier: a hang is the grader's failure, never a 0."""
    task = write_harbor_task(tmp_path / "tasks")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 60.0", "timeout_sec = 1.0"))
    (task / "tests" / "test.sh").write_text("#!/bin/bash\nsleep 60\n")
    record, _ = run_rollout(write_rows(tmp_path, task), write_harbor_config(tmp_path), recalc="gt")
    assert (record.exit_status, record.reward, record.infra_error) == ("grading_error", None, True)
    assert "verifier timed out after 1.0s" in (record.error or "")
    assert record.duration_s < 30
