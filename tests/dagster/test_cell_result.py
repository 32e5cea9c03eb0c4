"""One rule for the result of a cell, shared by the UI (Dagster's partition status) and the tables: an
infrastructure error after a graded result does not unseat it; a regrade with nothing to regrade is a
clear skip naming the cell, never a traceback."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from dagster import AssetKey, DagsterInstance

from mimo_assets.definitions import defs
from testkit.tasks import write_named_config, write_tasks
from tests.dagster.conftest import pk

GRADED = AssetKey("graded_results")
ROLLOUT_KEYS = [AssetKey("rollouts"), AssetKey("judge_scores"), AssetKey("graded_results")]


def _evaluate(instance: DagsterInstance, data: Path, cfg: Path, out: Path, **extra):
    run = {
        "ops": {
            "evaluate_op": {
                "config": {"dataset": str(data), "configs": [str(cfg)], "workers": 1, "output_dir": str(out), **extra}
            }
        }
    }
    return defs.resolve_job_def("evaluate").execute_in_process(instance=instance, run_config=run, raise_on_error=False)


def _status(instance: DagsterInstance, key: AssetKey = GRADED) -> tuple[set[str], set[str]]:
    """(materialized, failed) partitions as the UI shows them (Dagster's asset status cache); a failed
    partition is not counted materialized."""
    from tests.dagster.test_assets import _partition_status

    done, failed = _partition_status(instance, key.to_user_string())
    return done - failed, failed


def _table(instance: DagsterInstance) -> dict[str, bool]:
    """Cell → passed, as the results table (what the analytics read) has it."""
    job = defs.resolve_implicit_global_asset_job_def()
    assert job.execute_in_process(instance=instance, asset_selection=[AssetKey("results_table")]).success
    [rec] = instance.fetch_materializations(AssetKey("results_table"), limit=1).records
    df = pl.read_parquet(str(rec.asset_materialization.metadata["path"].value))
    rows = df.iter_rows(named=True)
    return {f"{r['config_name']}|{r['dataset']}/{r['instance_id']}": bool(r["passed"]) for r in rows}


def test_an_infra_error_after_a_pass_keeps_the_pass_in_the_ui_and_the_tables(tmp_path: Path, instance, llm) -> None:
    data, good = write_tasks(tmp_path, 1), write_named_config(tmp_path, "good")
    cell = pk(data, "greet-0", "good")
    assert _evaluate(instance, data, good, tmp_path / "first").success
    llm.inject(503, times=3)  # a later run (another folder) exhausts its retries: model_error, an infra error
    later = _evaluate(instance, data, good, tmp_path / "later")
    assert not later.success  # that run is red ...
    message = str(later.failure_data_for_node("evaluate_op").error.message)
    assert "1 partition(s) kept their earlier result" in message and cell in message
    assert _status(instance) == ({cell}, set())  # ... but the UI still shows the cell's pass
    assert _table(instance) == {cell: True}  # and so do the tables


def test_an_infra_error_in_a_backfill_after_a_pass_keeps_the_pass(tmp_path: Path, instance, llm) -> None:
    """A backfill run plans its partitions, so a failed one would count them failed: the kept result is
    logged again and the partition stays materialized."""
    data, good = write_tasks(tmp_path, 1), write_named_config(tmp_path, "good")
    cell = pk(data, "greet-0", "good")
    assert _evaluate(instance, data, good, tmp_path / "first").success
    job = defs.resolve_implicit_global_asset_job_def()
    llm.inject(503, times=3)
    result = job.execute_in_process(
        instance=instance, asset_selection=ROLLOUT_KEYS, partition_key=cell, raise_on_error=False
    )
    assert not result.success
    for key in (GRADED, AssetKey("rollouts")):
        assert _status(instance, key) == ({cell}, set()), key
    latest = instance.fetch_materializations(GRADED, limit=1).records[0].asset_materialization
    assert latest.tags["mimoagent/kept_after"] == "infra_error" and "infrastructure error" in latest.description
    assert latest.metadata["output_dir"].value == str(tmp_path / "first")  # the very result it keeps
    assert _table(instance) == {cell: True}


def test_a_redo_whose_infra_error_replaced_the_graded_files_fails_the_cell_in_the_ui_and_the_tables(
    tmp_path: Path,
    instance,
    llm,
) -> None:
    data, good = write_tasks(tmp_path, 2), write_named_config(tmp_path, "good")
    cells = {i: pk(data, f"greet-{i}", "good") for i in range(2)}
    assert _evaluate(instance, data, good, tmp_path / "out").success
    llm.inject(503, times=3)  # greet-0's redo in the same folder ends model_error: its graded record is gone
    assert not _evaluate(instance, data, good, tmp_path / "out", redo_existing=True).success
    assert _status(instance) == ({cells[1]}, {cells[0]})
    assert _table(instance) == {cells[1]: True}


def test_a_regrade_of_cells_with_nothing_to_regrade_skips_them_by_name(tmp_path: Path, instance, llm) -> None:
    """One cell has only a gold recalc result, one only an infrastructure error: a graded_results backfill
    over both (and a regradable one) regrades the one and names the two it skipped, without a traceback."""
    data = write_tasks(tmp_path, 3)
    good, bad = write_named_config(tmp_path, "good"), write_named_config(tmp_path, "bad")
    assert _evaluate(instance, data, good, tmp_path / "gold", recalc="gt", filter="^greet-0$").success
    llm.inject(503, times=3)
    assert not _evaluate(instance, data, bad, tmp_path / "infra", filter="^greet-1$").success
    assert _evaluate(instance, data, good, tmp_path / "agent", filter="^greet-2$").success
    gold_only, infra_only = pk(data, "greet-0", "good"), pk(data, "greet-1", "bad")
    regradable = pk(data, "greet-2", "good")
    job = defs.resolve_implicit_global_asset_job_def()
    before = len(instance.fetch_materializations(GRADED, limit=100).records)
    for partition in (gold_only, infra_only, regradable):
        result = job.execute_in_process(
            instance=instance, asset_selection=[GRADED], partition_key=partition, raise_on_error=False
        )
        assert result.success, partition
        logs = [e.message for e in instance.all_logs(result.run_id)]
        assert not any("Traceback" in (m or "") for m in logs)
        skipped = [m for m in logs if m and f"regrade of {partition} skipped" in m]
        assert bool(skipped) == (partition != regradable), (partition, logs[-5:])
    assert "recalc of the reference solution" in _skip_reason(instance, gold_only)
    assert "no rollout of it finished" in _skip_reason(instance, infra_only)
    assert len(instance.fetch_materializations(GRADED, limit=100).records) == before + 1  # only the regradable one


def _skip_reason(instance: DagsterInstance, partition: str) -> str:
    for run in instance.get_runs():
        for event in instance.all_logs(run.run_id):
            if event.message and f"regrade of {partition} skipped" in event.message:
                return event.message
    raise AssertionError(f"no skip logged for {partition}")
