"""A row that needs its image is never graded `Fail` on the local environment: the plan refuses it (exit 2,
one line per row), and a rollout started without planning ends as `environment_error`."""

from __future__ import annotations

from pathlib import Path

import pytest

from mimo_core.config import read_config
from mimo_core.datasets.loader import load_tasks
from mimo_core.records.results import ResultsStore
from mimo_core.run.job import RolloutJob
from mimo_core.run.rollout import run_one
from tests.core.conftest import run_cli
from tests.harbor.conftest import write_harbor_config, write_harbor_task, write_rows


@pytest.mark.parametrize("recalc", [[], ["--recalc-input", "gt"]], ids=["agent-run", "recalc-gt"])
def test_a_row_needing_its_image_is_a_plan_time_error_on_local(tmp_path: Path, scripted_llm, recalc) -> None:
    rows = write_rows(
        tmp_path,
        write_harbor_task(tmp_path / "tasks", "needs-image", image=True),
        write_harbor_task(tmp_path / "tasks", "runs-anywhere"),
    )
    proc = run_cli(
        ["-c", str(write_harbor_config(tmp_path)), "--dataset", str(rows), "-o", str(tmp_path / "out"), *recalc],
        scripted_llm,
    )
    assert proc.returncode == 2
    assert "row needs-image needs its image 'mimo-tests/needs-image:latest'" in proc.stderr
    assert "environment_class: docker" in proc.stderr and "run_image_tasks_on_host: true" in proc.stderr
    assert "runs-anywhere" not in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()
    assert scripted_llm.requests == []


def test_a_rollout_started_without_planning_is_an_environment_error_not_a_fail(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MIMO_TEST_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("MIMO_TEST_API_KEY", "unused")
    rows = write_rows(tmp_path, write_harbor_task(tmp_path / "tasks", "needs-image", image=True))
    [task] = load_tasks(str(rows))
    job = RolloutJob(
        task=task,
        config=read_config(write_harbor_config(tmp_path)),
        output_dir=tmp_path / "out",
        run_id="r",
        recalc="gt",
    )
    record = run_one(job)
    assert (record.exit_status, record.reward, record.passed, record.infra_error) == (
        "environment_error",
        None,
        None,
        True,
    )
    assert "needs its image" in (record.error or "")


def test_the_switch_runs_it_on_the_host_anyway(tmp_path: Path, scripted_llm) -> None:
    rows = write_rows(tmp_path, write_harbor_task(tmp_path / "tasks", "needs-image", image=True))
    cfg = write_harbor_config(tmp_path, environment={"run_image_tasks_on_host": True})
    proc = run_cli(
        ["-c", str(cfg), "--dataset", str(rows), "-o", str(tmp_path / "out"), "--recalc-input", "gt"], scripted_llm
    )
    # it runs (its verifier then finds no repository: a grading_error, exit 3), it is not refused
    assert proc.returncode in (0, 3), proc.stderr
    assert "needs its image" not in proc.stderr
    [record] = ResultsStore(tmp_path / "out").load().values()
    assert record.exit_status != "environment_error"
