"""With `sandbox: bwrap`, the task's absolute cwd is real inside the sandbox: an agent that works in /app
works exactly as in a container, and its committed work is graded."""

from __future__ import annotations

import json
from pathlib import Path

from testkit.scripted_llm import call, turns
from tests.harbor.conftest import write_harbor_config, write_harbor_task, write_rows
from tests.host_needs import need_bwrap

GIT = "git -c user.name=agent -c user.email=agent@example.com"


def test_cd_app_pwd_ls_in_a_local_bwrap_rollout_lists_the_tasks_files(
    tmp_path: Path, scripted_llm, run_rollout
) -> None:
    need_bwrap()
    scripted_llm.set_responder(
        turns(
            call("bash", command="cd /app && pwd && ls"),
            call("bash", command=f"cd /app && echo goodbye > greeting.txt && {GIT} commit -qam fix"),
            call("submit"),
        )
    )
    rows = write_rows(tmp_path, write_harbor_task(tmp_path / "tasks"))
    record, rollout = run_rollout(rows, write_harbor_config(tmp_path, environment={"sandbox": "bwrap"}))
    messages = json.loads((rollout / "traj.json").read_text())["messages"]
    first_tool = next(m for m in messages if m["role"] == "tool")
    assert first_tool["content"].split()[:2] == ["/app", "greeting.txt"]
    assert (record.exit_status, record.reward) == ("submitted", 1.0)


def test_without_bwrap_the_same_command_explains_where_the_cwd_is(tmp_path: Path, scripted_llm, run_rollout) -> None:
    scripted_llm.set_responder(turns(call("bash", command="cd /app && ls"), call("submit")))
    rows = write_rows(tmp_path, write_harbor_task(tmp_path / "tasks"))
    _, rollout = run_rollout(rows, write_harbor_config(tmp_path))
    messages = json.loads((rollout / "traj.json").read_text())["messages"]
    first_tool = next(m for m in messages if m["role"] == "tool")
    assert "/app is the task's working directory inside a container" in first_tool["content"]
    assert "environment.sandbox: bwrap" in first_tool["content"]
