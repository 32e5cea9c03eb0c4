"""The code location loads, the nightly schedule asks for the configured set, partition keys are safe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import RunRequest, SkipReason, build_schedule_context

from mimo_assets.partitions import check_key, dataset_name, partition_key, split_key
from mimo_assets.schedules import nightly_eval, nightly_request
from tests.core.conftest import REPO


def test_dagster_definitions_validate_passes_on_workspace(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    dagster = Path(sys.executable).with_name("dagster")
    proc = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "All code locations passed validation" in proc.stderr + proc.stdout


def test_nightly_schedule_requests_the_configured_set_tagged_with_the_date(tmp_path: Path) -> None:
    env = {
        "MIMOAGENT_NIGHTLY_DATASET": "/data/tasks.jsonl",
        "MIMOAGENT_NIGHTLY_CONFIGS": f"/c/a.yaml{os.pathsep}/c/b.yaml",
        "MIMOAGENT_NIGHTLY_ROLLOUTS": "3",
        "MIMOAGENT_OUTPUT_ROOT": str(tmp_path),
    }
    req = nightly_request("2026-03-04", env)
    assert isinstance(req, RunRequest)
    assert req.tags["mimoagent/date"] == "2026-03-04" and req.run_key == "nightly-2026-03-04"
    cfg = req.run_config["ops"]["evaluate_op"]["config"]
    assert cfg["configs"] == ["/c/a.yaml", "/c/b.yaml"] and cfg["num_rollouts"] == 3
    assert cfg["output_dir"].endswith("nightly-2026-03-04")
    assert isinstance(nightly_request("2026-03-04", {}), SkipReason)


def test_nightly_schedule_evaluates_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIMOAGENT_NIGHTLY_DATASET", "/data/tasks.jsonl")
    monkeypatch.setenv("MIMOAGENT_NIGHTLY_CONFIGS", "/c/a.yaml")
    import datetime

    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(tmp_path)) as instance:
        when = datetime.datetime(2026, 5, 6, 2, 0)
        [req] = nightly_eval.evaluate_tick(build_schedule_context(instance, scheduled_execution_time=when)).run_requests
        assert req.tags["mimoagent/date"] == "2026-05-06"
        assert req.run_config["ops"]["evaluate_op"]["config"]["paired"] is False


def test_partition_keys_name_their_dataset_round_trip_and_bad_ids_are_named(tmp_path: Path) -> None:
    key = partition_key("verified-1a2b3c", "owner/repo#1", "gpt5")
    assert str(key) == "gpt5|verified-1a2b3c/owner/repo#1"
    assert split_key(str(key)) == split_key(key) == ("verified-1a2b3c", "owner/repo#1", "gpt5")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = dataset_name(str(tmp_path / "a" / "test.jsonl")), dataset_name(str(tmp_path / "b" / "test.jsonl"))
    assert a.startswith("test-") and b.startswith("test-") and a != b  # same file name, two datasets
    assert dataset_name("org/bench", "dev").startswith("bench-") and dataset_name("org/bench", "dev").endswith("-dev")
    with pytest.raises(ValueError, match=r"instance 'a\|b' cannot be a Dagster partition key"):
        check_key("a|b", "instance")


def test_config_folder_sensor_registers_new_and_edited_files_once(tmp_path: Path, monkeypatch) -> None:
    from dagster import build_sensor_context

    from mimo_assets.sensors import new_config_files

    monkeypatch.setenv("MIMOAGENT_CONFIG_DIR", str(tmp_path))
    (tmp_path / "a.yaml").write_text("agent: {}\n")
    first = new_config_files.evaluate_tick(build_sensor_context())
    [req] = first.run_requests
    assert req.run_config["ops"]["config_files"]["config"]["paths"] == [str((tmp_path / "a.yaml").resolve())]
    again = new_config_files.evaluate_tick(build_sensor_context(cursor=first.cursor))
    assert again.run_requests == []
    (tmp_path / "b.yaml").write_text("agent: {}\n")
    [req] = new_config_files.evaluate_tick(build_sensor_context(cursor=first.cursor)).run_requests
    assert req.run_config["ops"]["config_files"]["config"]["paths"] == [str((tmp_path / "b.yaml").resolve())]


def test_backfill_of_many_partitions_becomes_one_range_per_config(tmp_path: Path) -> None:
    """What the backfill daemon starts from: one partition range over the planned cells, however many
    partitions it covers (the multi-run policy then cuts it in chunks)."""
    from dagster import DagsterInstance
    from dagster._core.definitions.partitions.context import partition_loading_context

    from mimo_assets.partitions import register_planned, rollout_partitions

    (tmp_path / "home").mkdir()
    with DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        register_planned(instance, "ds", [(f"i{n:04d}", c) for c in ("a", "b") for n in range(2000)])
        keys = [str(partition_key("ds", f"i{n:04d}", c)) for n in range(2000) for c in ("a", "b")]
        with partition_loading_context(dynamic_partitions_store=instance):
            subset = rollout_partitions.empty_subset().with_partition_keys(keys)
            ranges = subset.get_partition_key_ranges(rollout_partitions)
    assert [(r.start, r.end) for r in ranges] == [("a|ds/i0000", "b|ds/i1999")]


def test_multi_run_backfill_chunks_cover_each_selected_partition_once(tmp_path: Path) -> None:
    """Dagster's multi-run policy on the planned-cell partitions: each chunk is a range of at most N
    keys that a run resolves (as `context.partition_keys`) to exactly its share of the selection: no
    key twice, none lost, none unselected, also around a hole in the selection."""
    from dagster import AssetKey, BackfillPolicy, DagsterInstance, PartitionKeyRange
    from dagster._core.definitions.automation_tick_evaluation_context import (
        _build_run_requests_with_backfill_policy,
    )
    from dagster._core.definitions.partitions.context import partition_loading_context

    from mimo_assets.assets.rollouts import DEFAULT_PARTITIONS_PER_RUN, PARTITIONS_PER_RUN_ENV, backfill_policy
    from mimo_assets.partitions import register_planned, rollout_partitions

    assert backfill_policy("") == BackfillPolicy.multi_run(DEFAULT_PARTITIONS_PER_RUN)
    assert backfill_policy("0") == BackfillPolicy.single_run()
    with pytest.raises(ValueError, match=PARTITIONS_PER_RUN_ENV):
        backfill_policy("lots")
    (tmp_path / "home").mkdir()
    with DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        register_planned(instance, "ds", [(f"i{n}", c) for c in ("a", "b") for n in range(7)])
        selected = {str(partition_key("ds", f"i{n}", c)) for n in range(7) for c in ("a", "b") if n != 3}
        with partition_loading_context(dynamic_partitions_store=instance):
            requests = _build_run_requests_with_backfill_policy(
                [AssetKey("rollouts")],
                [],
                backfill_policy("2"),
                frozenset(selected),
                rollout_partitions,
                tags={},
                dynamic_partitions_store=instance,
            )
            chunks = [
                rollout_partitions.get_partition_keys_in_range(
                    PartitionKeyRange(
                        r.tags["dagster/asset_partition_range_start"], r.tags["dagster/asset_partition_range_end"]
                    )
                )
                for r in requests
            ]
    assert len(requests) == 7  # ranges a|i0-a|i2 (2 + 1), a|i4-b|i2 (2 + 2 + 2), b|i4-b|i6 (2 + 1)
    assert all(1 <= len(c) <= 2 for c in chunks)
    flat = [str(k) for c in chunks for k in c]
    assert sorted(flat) == sorted(selected)


def test_analytics_sensor_fires_once_new_graded_results_land_and_nothing_runs(tmp_path: Path) -> None:
    from dagster import AssetMaterialization, DagsterInstance, build_sensor_context
    from dagster._core.storage.dagster_run import DagsterRun, DagsterRunStatus

    from mimo_assets.partitions import register_planned
    from mimo_assets.sensors import analytics_after_new_results

    (tmp_path / "home").mkdir()
    with DagsterInstance.from_config(str(tmp_path / "home")) as instance:

        def tick(cursor: str | None = None):
            return analytics_after_new_results.evaluate_tick(build_sensor_context(instance=instance, cursor=cursor))

        assert tick().run_requests == []  # nothing graded yet
        register_planned(instance, "ds", [("i1", "a")])
        graded = AssetMaterialization("graded_results", partition=str(partition_key("ds", "i1", "a")))
        instance.report_runless_asset_event(graded)
        first = tick()
        [req] = first.run_requests
        assert req.run_key.startswith("analytics-")
        assert tick(first.cursor).run_requests == []  # analytics are current
        instance.report_runless_asset_event(graded)
        instance.add_run(DagsterRun(job_name="evaluate", run_id="r-busy", status=DagsterRunStatus.STARTED))
        assert tick(first.cursor).run_requests == []  # an evaluation is still writing
        instance.delete_run("r-busy")
        assert len(tick(first.cursor).run_requests) == 1


def test_computed_assets_declare_a_code_version() -> None:
    from mimo_assets.definitions import defs

    graph = defs.resolve_asset_graph()
    computed = [
        "rollouts",
        "judge_scores",
        "graded_results",
        "results_table",
        "pass_rates",
        "pass_at_k",
        "ab_comparison",
        "usage_by_config",
        "exit_statuses",
        "pass_rate_trend",
        "sft_export",
        "rl_export",
        "atif_export",
    ]
    from dagster import AssetKey

    assert {k: graph.get(AssetKey(k)).code_version for k in computed} == {k: "1" for k in computed}


def test_endpoint_and_key_are_env_vars_read_when_a_run_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster import EnvVar

    from resources import ModelEndpoint

    monkeypatch.setenv("OPENAI_API_KEY", "sk-at-load")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("MIMOAGENT_MODEL_NAME", raising=False)
    endpoint = ModelEndpoint.from_env()
    assert endpoint.api_key == EnvVar("OPENAI_API_KEY") and endpoint.model_name is None  # the name, not the key
    monkeypatch.setenv("OPENAI_API_KEY", "sk-at-run")
    resolved = endpoint.process_config_and_initialize().overrides()
    assert resolved == {"model": {"model_kwargs": {"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-at-run"}}}
