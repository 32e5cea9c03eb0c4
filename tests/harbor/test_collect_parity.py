"""Strict collect grades exactly what DeepSWE's collect hook (`git diff --binary <base> HEAD`) produces;
lenient also counts uncommitted work and says so in every output."""

from __future__ import annotations

import json
from pathlib import Path

from testkit.scripted_llm import call, turns
from tests.harbor.conftest import write_harbor_config, write_harbor_task, write_rows

EDIT = "echo goodbye > greeting.txt"  # relative: /app exists only in a container or bwrap
GIT = "git -c user.name=agent -c user.email=agent@example.com"
UNCOMMITTED = turns(call("bash", command=EDIT), call("submit"))
ON_A_NEW_BRANCH = turns(
    call("bash", command=f"git checkout -q -b fix && {EDIT} && {GIT} commit -qam fix"), call("submit")
)


def _outputs(rollout: Path) -> tuple[dict, dict]:
    return (
        json.loads((rollout / "reward_extra_info.json").read_text()),
        json.loads((rollout / "traj.json").read_text()),
    )


def test_uncommitted_work_scores_zero_in_strict_mode_like_the_official_hook(
    tmp_path: Path, scripted_llm, run_rollout
) -> None:
    scripted_llm.set_responder(UNCOMMITTED)
    rows = write_rows(tmp_path, write_harbor_task(tmp_path / "tasks"))
    record, rollout = run_rollout(rows, write_harbor_config(tmp_path))
    assert (record.exit_status, record.reward, record.passed) == ("submitted", 0.0, False)
    assert record.grading["collect_mode"] == "strict" and record.grading["uncommitted_files"] == 1
    extra, traj = _outputs(rollout)
    assert extra["collect_mode"] == "strict" and traj["config"]["grading"]["collect"] == "strict"
    assert traj["submission"] == ""


def test_uncommitted_work_scores_one_in_lenient_mode_and_every_output_says_lenient(
    tmp_path: Path, scripted_llm, run_rollout
) -> None:
    scripted_llm.set_responder(UNCOMMITTED)
    rows = write_rows(tmp_path, write_harbor_task(tmp_path / "tasks"))
    record, rollout = run_rollout(rows, write_harbor_config(tmp_path, "lenient", grading={"collect": "lenient"}))
    assert (record.exit_status, record.reward, record.passed) == ("submitted", 1.0, True)
    assert record.grading["collect_mode"] == "lenient" and record.grading["committed_for_agent"] is True
    extra, traj = _outputs(rollout)
    assert extra["collect_mode"] == "lenient" and traj["config"]["grading"]["collect"] == "lenient"
    assert "+goodbye" in traj["submission"]


def test_work_committed_on_a_new_branch_counts_because_the_hook_diffs_head(
    tmp_path: Path, scripted_llm, run_rollout
) -> None:
    scripted_llm.set_responder(ON_A_NEW_BRANCH)
    rows = write_rows(tmp_path, write_harbor_task(tmp_path / "tasks"))
    record, rollout = run_rollout(rows, write_harbor_config(tmp_path))
    assert (record.exit_status, record.reward, record.passed) == ("submitted", 1.0, True)
    assert record.grading["uncommitted_files"] == 0
    assert "+goodbye" in _outputs(rollout)[1]["submission"]


def test_a_hook_naming_a_base_commit_the_sandbox_lacks_is_a_grading_error_not_a_zero(
    tmp_path: Path, scripted_llm, run_rollout
) -> None:
    """The task's image holds the upstream base commit; a sandbox seeded otherwise does not."""
    scripted_llm.set_responder(ON_A_NEW_BRANCH)
    task = write_harbor_task(tmp_path / "tasks")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("$(git rev-list --max-parents=0 HEAD | tail -n 1)", "b5addb64f016"))
    record, _ = run_rollout(write_rows(tmp_path, task), write_harbor_config(tmp_path))
    assert (record.exit_status, record.reward, record.infra_error) == ("grading_error", None, True)
    assert "names a commit the sandbox's repository lacks" in (record.error or "")
