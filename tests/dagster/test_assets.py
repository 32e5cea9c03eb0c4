"""Materialize real partitions into a temporary instance: datasets, configs, rollouts on the local
environment against the scripted LLM, a regrade, the evaluate job, results table, analytics, checks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance

from mimo_assets.definitions import defs
from mimo_assets.partitions import dataset_name
from mimo_core.viewer.urls import viewer_base_url
from testkit.tasks import write_named_config, write_tasks
from tests.dagster.conftest import pk

ROLLOUT_KEYS = [AssetKey("rollouts"), AssetKey("judge_scores"), AssetKey("graded_results")]


def _run(instance: DagsterInstance, selection: list[AssetKey], **kwargs):
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=instance, asset_selection=selection, **kwargs)
    assert result.success
    return result


def _count(instance: DagsterInstance, key: str) -> int:
    return len(instance.fetch_materializations(AssetKey(key), limit=1000).records)


def _register_inputs(tmp_path: Path, instance: DagsterInstance) -> Path:
    """4 instances, configs `good` (passes) and `bad` (fails), registered through their assets; loading the
    dataset plans its rows for both."""
    data = write_tasks(tmp_path, 4)
    good, bad = write_named_config(tmp_path, "good"), write_named_config(tmp_path, "bad")
    _run(
        instance,
        [AssetKey("config_files")],
        run_config={"ops": {"config_files": {"config": {"paths": [str(good), str(bad)]}}}},
    )
    _run(
        instance,
        [AssetKey("dataset_rows"), AssetKey("converted_jsonl")],
        run_config={"ops": {"load_dataset": {"config": {"source": str(data), "plan_configs": ["good", "bad"]}}}},
    )
    return data


def _backfill(instance: DagsterInstance, data: Path) -> None:
    """What a single-run backfill launches (one run over a partition range, K=2 rollouts concurrent
    inside), then one more partition under the other config."""
    _run(
        instance,
        ROLLOUT_KEYS,
        tags={
            "dagster/asset_partition_range_start": pk(data, "greet-0", "good"),
            "dagster/asset_partition_range_end": pk(data, "greet-3", "good"),
        },
        run_config={"ops": {"rollouts": {"config": {"num_rollouts": 2, "workers": 4}}}},
    )
    _run(instance, ROLLOUT_KEYS, partition_key=pk(data, "greet-1", "bad"))


def _assert_points_at(instance: DagsterInstance, child: str, parent: str) -> None:
    """Each partition's `child` event points at the storage id of that partition's `parent` event."""
    records = instance.fetch_materializations(AssetKey(parent), limit=100).records
    parents = {r.partition_key: r.storage_id for r in records}
    children = instance.fetch_materializations(AssetKey(child), limit=100).records
    assert len(children) == len(parents) == 5
    for rec in children:
        pointer = rec.asset_materialization.tags[f"dagster/input_event_pointer/{parent}"]
        assert pointer == str(parents[rec.partition_key]), (child, rec.partition_key, pointer)


def test_loading_inputs_registers_instance_and_config_partitions(tmp_path: Path, instance) -> None:
    big = write_tasks(tmp_path / "big", 40)
    _run(
        instance,
        [AssetKey("dataset_rows"), AssetKey("converted_jsonl")],  # loaded, planned for nothing
        run_config={"ops": {"load_dataset": {"config": {"source": str(big)}}}},
    )
    assert instance.get_dynamic_partitions("rollout") == []  # so nothing shows as missing
    data = _register_inputs(tmp_path, instance)  # loaded in the UI for both configs: every row planned for each
    assert sorted(instance.get_dynamic_partitions("rollout")) == sorted(
        pk(data, f"greet-{i}", c) for i in range(4) for c in ("bad", "good")
    )
    with pytest.raises(Exception, match=r"plan_configs \['nope'\] are not registered configs"):
        _run(
            instance,
            [AssetKey("dataset_rows"), AssetKey("converted_jsonl")],
            run_config={"ops": {"load_dataset": {"config": {"source": str(data), "plan_configs": ["nope"]}}}},
        )


def test_a_partition_range_materializes_in_one_run_and_a_regrade_adds_graded_results_only(
    tmp_path: Path,
    instance,
) -> None:
    data = _register_inputs(tmp_path, instance)
    _backfill(instance, data)
    assert len(instance.get_runs()) == 4  # 2 input runs, 1 for the whole range, 1 for the single partition
    _assert_points_at(instance, "judge_scores", "rollouts")  # Dagster's lineage: storage ids, never "NULL"
    _assert_points_at(instance, "graded_results", "judge_scores")
    assert instance.get_materialized_partitions(AssetKey("graded_results")) == {
        *(pk(data, f"greet-{i}", "good") for i in range(4)),
        pk(data, "greet-1", "bad"),
    }
    mat = instance.fetch_materializations(AssetKey("rollouts"), limit=10).records[-1].asset_materialization
    assert mat.metadata["rollouts"].value == 2 and "rollout_table" in mat.metadata
    assert mat.metadata["rollout_table"].value.count(f"]({viewer_base_url()}/runs/") == 2  # a viewer link per k

    _run(instance, [AssetKey("graded_results")], partition_key=pk(data, "greet-1", "bad"))  # regrade only
    assert (_count(instance, "rollouts"), _count(instance, "graded_results")) == (5, 6)


def test_analytics_and_checks_over_graded_partitions(tmp_path: Path, instance) -> None:
    data = _register_inputs(tmp_path, instance)
    _backfill(instance, data)
    result = _run(
        instance,
        [
            AssetKey(k)
            for k in ("results_table", "pass_rates", "pass_at_k", "ab_comparison", "usage_by_config", "exit_statuses")
        ],
    )
    checks = {e.asset_check_key.name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"trajectories_validate": True, "rewards_in_range": True, "no_missing_partitions": True}
    meta = _latest_meta(instance, "pass_rates")
    name = dataset_name(str(data))
    assert "| attempted | errors | graded | instances | passed | pass rate (of graded) |" in meta["table"]
    assert f"| {name} | rollout | good | 8 | 0 | 8 | 4 | 8 | 1.000" in meta["table"]
    assert f"| {name} | rollout | bad | 1 | 0 | 1 | 1 | 0 | 0.000" in meta["table"]
    assert "data:image/png;base64," in meta["plot"] and Path(meta["plot_path"]).read_bytes()[:4] == b"\x89PNG"
    assert f"| {name} | rollout | good | 2 | 4 | 1.000 |" in _latest_meta(instance, "pass_at_k")["table"]
    assert _latest_meta(instance, "results_table")["rows"] == 9


def test_a_trajectory_that_no_longer_validates_fails_its_check(tmp_path: Path, instance) -> None:
    data = _register_inputs(tmp_path, instance)
    _run(instance, ROLLOUT_KEYS, partition_key=pk(data, "greet-0", "good"))
    result = _run(instance, [AssetKey("results_table")])
    assert {e.asset_check_key.name: e.passed for e in result.get_asset_check_evaluations()}["trajectories_validate"]
    import polars as pl

    broken = pl.read_parquet(Path(_latest_meta(instance, "results_table")["path"]))["traj_path"][0]
    Path(broken).write_text(json.dumps({"schema_version": "1.0"}))
    result = _run(instance, [AssetKey("results_table")])
    checks = {e.asset_check_key.name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["trajectories_validate"] is False


def _latest_meta(instance: DagsterInstance, key: str) -> dict:
    mat = instance.fetch_materializations(AssetKey(key), limit=1).records[0].asset_materialization
    return {k: v.value for k, v in mat.metadata.items()}


def test_evaluate_job_runs_missing_partitions_only_unless_redo(tmp_path: Path, instance) -> None:
    data = write_tasks(tmp_path, 3)
    good = write_named_config(tmp_path, "good")
    job = defs.resolve_job_def("evaluate")
    config = {"dataset": str(data), "configs": [str(good)], "workers": 3, "output_dir": str(tmp_path / "eval")}
    run = {"ops": {"evaluate_op": {"config": config}}}
    assert job.execute_in_process(instance=instance, run_config=run, tags={"mimoagent/date": "2026-01-02"}).success
    assert _count(instance, "graded_results") == 3
    mat = instance.fetch_materializations(AssetKey("graded_results"), limit=1).records[0].asset_materialization
    assert mat.tags["mimoagent/date"] == "2026-01-02"
    assert job.execute_in_process(instance=instance, run_config=run).success
    assert _count(instance, "graded_results") == 3
    config["redo_existing"] = True
    assert job.execute_in_process(instance=instance, run_config=run).success
    assert _count(instance, "graded_results") == 6


def test_infra_errors_fail_their_partitions_and_the_run_and_the_next_run_fills_them(
    tmp_path: Path,
    instance,
    llm,
) -> None:
    data = write_tasks(tmp_path, 2)
    good = write_named_config(tmp_path, "good")
    job = defs.resolve_job_def("evaluate")
    run = {
        "ops": {
            "evaluate_op": {
                "config": {
                    "dataset": str(data),
                    "configs": [str(good)],
                    "workers": 1,
                    "output_dir": str(tmp_path / "eval"),
                }
            }
        }
    }
    llm.inject(503, times=3)  # the first rollout exhausts its 3 attempts: model_error, an infra error
    first = job.execute_in_process(instance=instance, run_config=run, raise_on_error=False)
    assert not first.success  # not green: one of its partitions failed
    assert "infrastructure errors: 1 partition(s) failed" in str(first.failure_data_for_node("evaluate_op").error)
    assert len(instance.get_materialized_partitions(AssetKey("graded_results"))) == 1
    for key in ("rollouts", "graded_results"):  # what the UI's partition view shows
        assert _partition_status(instance, key) == ({pk(data, "greet-1", "good")}, {pk(data, "greet-0", "good")})
    assert job.execute_in_process(instance=instance, run_config=run).success
    both = {pk(data, "greet-0", "good"), pk(data, "greet-1", "good")}
    assert instance.get_materialized_partitions(AssetKey("graded_results")) == both
    assert _count(instance, "graded_results") == 2
    assert _partition_status(instance, "graded_results") == (both, set())


def _partition_status(instance: DagsterInstance, key: str) -> tuple[set[str], set[str]]:
    """(materialized, failed) partitions as Dagster's asset status cache (the UI) computes them."""
    from dagster._core.storage.partition_status_cache import get_and_update_asset_status_cache_value

    parts = defs.resolve_assets_def(key).partitions_def
    cache = get_and_update_asset_status_cache_value(instance, AssetKey(key), parts)
    done = cache.deserialize_materialized_partition_subsets(parts).get_partition_keys()
    failed = cache.deserialize_failed_partition_subsets(parts).get_partition_keys()
    return set(map(str, done)), set(map(str, failed))


def test_two_nights_give_a_trend_with_two_points_and_the_first_nights_table_stays_readable(
    tmp_path: Path,
    instance,
) -> None:
    import polars as pl

    data = write_tasks(tmp_path, 2)
    configs = [str(write_named_config(tmp_path, "good")), str(write_named_config(tmp_path, "bad"))]
    evaluate = defs.resolve_job_def("evaluate")
    for night in ("2026-01-01", "2026-01-02"):
        run = {
            "ops": {
                "evaluate_op": {
                    "config": {
                        "dataset": str(data),
                        "configs": configs,
                        "paired": True,
                        "workers": 2,
                        "output_dir": str(tmp_path / night),
                    }
                }
            }
        }
        assert evaluate.execute_in_process(instance=instance, run_config=run, tags={"mimoagent/date": night}).success
    assert defs.resolve_job_def("refresh_analytics").execute_in_process(instance=instance).success

    tables = Path(os.environ["MIMOAGENT_OUTPUT_ROOT"]) / "tables"
    first = pl.read_parquet(tables / "nights" / "2026-01-01.parquet")
    assert first.height == 4 and set(first["night"]) == {"2026-01-01"}
    assert set(first["run_dir"]) == {str(tmp_path / "2026-01-01")}  # not mixed with the second night's run
    latest = pl.read_parquet(tables / "results_table.parquet")  # the default view (IO manager): the latest night
    assert set(latest["night"]) == {"2026-01-02"} and set(latest["run_dir"]) == {str(tmp_path / "2026-01-02")}

    [trend] = instance.fetch_materializations(AssetKey("pass_rate_trend"), limit=1).records
    meta = trend.asset_materialization.metadata
    assert meta["nights"].value == 2 and meta["rows"].value == 4  # two points per config
    name = dataset_name(str(data))  # one number per dataset, kind of run and config
    assert meta[f"pass_rate_of_graded/{name}/rollout/good"].value == 1.0
    assert meta[f"pass_rate_of_graded/{name}/rollout/bad"].value == 0.0
    assert meta["plot"].value.startswith("![pass_rate_trend](data:image/png;base64,")
    [table] = instance.fetch_materializations(AssetKey("results_table"), limit=1).records
    assert table.asset_materialization.metadata["night"].value == "2026-01-02"
