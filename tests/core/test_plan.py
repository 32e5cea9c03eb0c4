"""The one run planner: selection, A/B assignment, resume, named partitions, regrading a saved folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mimo_core.errors import ConfigError
from mimo_core.records.results import ResultRecord, ResultsStore
from mimo_core.run.plan import RunRequest, Selection, plan_run
from mimo_core.status import ExitStatus
from testkit.tasks import write_config, write_named_config, write_tasks

TRAJ = Path(__file__).parent / "fixtures" / "traj_v1_0.json"  # a trajectory as a finished rollout leaves it


@pytest.fixture(autouse=True)
def _endpoint_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The configs name their endpoint by variables; planning loads them but never calls the model."""
    monkeypatch.setenv("MIMO_TEST_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MIMO_TEST_API_KEY", "sk-unused")


def _request(tmp_path: Path, n: int = 4, configs: tuple[str, ...] = ("a",), **kw: object) -> RunRequest:
    data = write_tasks(tmp_path, n)
    paths = [str(write_named_config(tmp_path, c)) for c in configs]
    return RunRequest(dataset=str(data), configs=paths, output_dir=tmp_path / "out", run_id="r1", **kw)


def _finish(out: Path, instance_id: str, config_name: str, k: int = 0, submission: str = "") -> None:
    """A finished rollout as `run_one` leaves it: its traj.json, then its results.jsonl line."""
    rel = f"{instance_id}/{config_name}/{k}"
    (out / rel).mkdir(parents=True, exist_ok=True)
    traj = json.loads(TRAJ.read_text()) | {
        "instance_id": instance_id,
        "config_name": config_name,
        "rollout_index": k,
        "submission": submission,
    }
    (out / rel / "traj.json").write_text(json.dumps(traj))
    ResultsStore(out).put(
        ResultRecord(
            instance_id=instance_id,
            config_name=config_name,
            rollout_index=k,
            run_id="r0",
            exit_status=ExitStatus.SUBMITTED,
            output_dir=rel,
            reward=1.0,
            passed=True,
        )
    )


def test_selection_filters_shuffles_then_slices(tmp_path: Path) -> None:
    request = _request(tmp_path, n=6, selection=Selection(filter="greet-[0-4]", shuffle=True, seed=3, slice="0:2"))
    plan = plan_run(request)
    again = plan_run(request)
    assert len(plan.tasks) == 2 and [t.instance_id for t in plan.tasks] == [t.instance_id for t in again.tasks]
    assert all(t.instance_id != "greet-5" for t in plan.tasks)


def test_num_rollouts_gives_k_jobs_per_instance(tmp_path: Path) -> None:
    plan = plan_run(_request(tmp_path, n=2, num_rollouts=3))
    assert sorted(j.key for j in plan.jobs) == [(f"greet-{i}", "a", k) for i in range(2) for k in range(3)]
    assert all(j.output_dir == tmp_path / "out" and j.run_id == "r1" for j in plan.jobs)


def test_ab_assignment_depends_on_seed_and_instance_not_order(tmp_path: Path) -> None:
    request = _request(tmp_path, n=20, configs=("a", "b"))
    assigned = {j.task.instance_id: j.config.name for j in plan_run(request).jobs}
    assert set(assigned.values()) == {"a", "b"}
    shuffled = request.model_copy(update={"selection": Selection(shuffle=True, seed=0)})
    assert {j.task.instance_id: j.config.name for j in plan_run(shuffled).jobs} == assigned


def test_finished_rollouts_are_skipped_unless_redo_existing(tmp_path: Path) -> None:
    request = _request(tmp_path, n=3)
    _finish(request.output_dir, "greet-1", "a")
    plan = plan_run(request)
    assert sorted(j.task.instance_id for j in plan.jobs) == ["greet-0", "greet-2"] and plan.skipped == 1
    redo = plan_run(request.model_copy(update={"redo_existing": True}))
    assert len(redo.jobs) == 3 and redo.skipped == 0


def test_partitions_select_exact_instance_config_pairs(tmp_path: Path) -> None:
    pairs = [("greet-2", "b"), ("greet-0", "a")]
    plan = plan_run(_request(tmp_path, n=4, configs=("a", "b"), selection=Selection(partitions=pairs)))
    assert [(j.task.instance_id, j.config.name) for j in plan.jobs] == pairs


def test_partition_naming_an_unknown_config_is_a_config_error(tmp_path: Path) -> None:
    request = _request(tmp_path, n=1, selection=Selection(partitions=[("greet-0", "zzz")]))
    with pytest.raises(ConfigError, match=r"no config named 'zzz'"):
        plan_run(request)


def test_regrade_keeps_the_saved_config_names_and_submissions(tmp_path: Path) -> None:
    source = tmp_path / "earlier"
    _finish(source, "greet-0", "b", submission="diff-0")
    _finish(source, "greet-1", "old", k=1, submission="diff-1")
    request = _request(tmp_path, n=3, configs=("a", "b"), recalc=str(source))
    jobs = {j.key: j for j in plan_run(request).jobs}
    assert set(jobs) == {("greet-0", "b", 0), ("greet-1", "old", 1)}
    assert jobs[("greet-0", "b", 0)].recalc_submission == "diff-0"
    assert jobs[("greet-1", "old", 1)].config.path.endswith(("a.yaml", "b.yaml"))  # today's sandbox settings
    assert {j.recalc for j in jobs.values()} == {str(source)}


def test_regrade_limited_to_partitions(tmp_path: Path) -> None:
    source = tmp_path / "earlier"
    _finish(source, "greet-0", "a")
    _finish(source, "greet-1", "a")
    request = _request(tmp_path, n=2, recalc=str(source), selection=Selection(partitions=[("greet-1", "a")]))
    assert [j.key for j in plan_run(request).jobs] == [("greet-1", "a", 0)]


def test_regrade_of_a_folder_without_results_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"no results\.jsonl there"):
        plan_run(_request(tmp_path, recalc=str(tmp_path / "empty")))


def test_request_json_round_trip_never_carries_overrides(tmp_path: Path) -> None:
    request = _request(tmp_path, overrides=[{"model": {"model_kwargs": {"api_key": "sk-SECRET"}}}])
    text = request.model_dump_json()
    assert "sk-SECRET" not in text
    back = RunRequest.model_validate_json(text)
    assert back.model_dump() == request.model_dump() and back.overrides == []


def test_cli_and_evaluate_job_build_the_same_request(tmp_path: Path) -> None:
    from mimo_assets.evaluate import EvaluateConfig
    from mimo_core.cli.parser import build_parser
    from mimo_core.cli.parser import request_from_args as cli_request

    data, cfg = write_tasks(tmp_path, 2), write_config(tmp_path, "a")
    out = tmp_path / "out"
    args = build_parser().parse_args(
        [
            "-c",
            str(cfg),
            "--dataset",
            str(data),
            "--filter",
            "greet",
            "--shuffle",
            "--seed",
            "7",
            "--slice",
            "0:1",
            "--num-rollouts",
            "2",
            "--redo-existing",
            "-o",
            str(out),
            "--run-id",
            "r9",
        ]
    )
    evaluate = EvaluateConfig(filter="greet", shuffle=True, seed=7, slice="0:1", num_rollouts=2, redo_existing=True)
    from_dagster = evaluate.to_request(dataset=str(data), configs=[str(cfg)], output_dir=out.resolve(), run_id="r9")
    assert cli_request(args) == from_dagster


def test_a_request_resolves_its_output_folder_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every door gets the same absolute folder (links resolved) from the request itself; a link loop is
    refused as the request is made, naming the path."""
    from pydantic import ValidationError

    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path)
    request = RunRequest(dataset="d.jsonl", configs=["a.yaml"], output_dir=Path("link/out"))
    assert request.output_dir == (tmp_path / "real" / "out").resolve()
    assert RunRequest.model_validate_json(request.model_dump_json()).output_dir == request.output_dir
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(ValidationError, match="cannot be used as a folder"):
        RunRequest(dataset="d.jsonl", configs=["a.yaml"], output_dir=Path("loop/out"))


def test_rows_selected_first_are_the_rows_the_plan_runs(tmp_path: Path) -> None:
    """`select_rows` (what a door checks before it makes its folder) then `plan_run(rows=...)` plans what
    `plan_run` alone plans, without loading or selecting again."""
    from mimo_core.run.plan import select_rows

    request = _request(tmp_path, n=6, selection=Selection(filter="greet-[0-4]", shuffle=True, seed=3, slice="0:3"))
    rows = select_rows(request)
    assert len(rows.tasks) == 6 and len(rows.selected) == 3
    plan = plan_run(request, rows=rows)
    assert [j.key for j in plan.jobs] == [j.key for j in plan_run(request).jobs]
    assert plan.tasks is rows.selected and plan.configs is rows.configs and plan.dataset_rows is rows.tasks
