"""Asset checks on the results table: trajectories validate, rewards are in range, nothing is missing."""

import os
from pathlib import Path

import polars as pl
from dagster import AssetCheckExecutionContext, AssetCheckResult, MetadataValue, asset_check

from mimo_assets.analysis.cache import RefreshCache
from mimo_assets.analysis.table import FolderReader, read_folder
from mimo_assets.asset_keys import GRADED_RESULTS
from mimo_assets.assets.results import results_table
from mimo_assets.partitions import partition_key
from mimo_core.records.trajectory import read_trajectory
from mimo_core.status import INFRA_STATUSES, INPUT_STATUSES
from resources import OutputStore

MAX_LISTED = 20


def invalid_trajectories(paths: list[str], cache: RefreshCache | None = None) -> list[str]:
    """What is wrong with each trajectory that does not validate; with `cache`, those that validated before
    and are unchanged since (size, modification time) are not read again."""
    todo, validated = cache.unvalidated(paths) if cache is not None else (paths, None)
    bad, good = [], []
    for path in todo:
        try:
            read_trajectory(path)  # any schema version this code wrote
            good.append(path)
        except ValueError as e:
            bad.append(f"{path}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    if validated is not None:
        validated(good)
    return bad


@asset_check(asset=results_table, description="Every rollout's traj.json exists and validates against the schema.")
def trajectories_validate(results_table: pl.DataFrame, output_store: OutputStore) -> AssetCheckResult:
    df = results_table.filter(~pl.col("infra_error"))  # the results; an infrastructure error may have none
    cache = RefreshCache.of(output_store.tables_dir())
    bad = invalid_trajectories(df["traj_path"].to_list(), cache)
    return AssetCheckResult(
        passed=not bad,
        metadata={
            "checked": df.height,
            "read": cache.read["trajectories"],  # the others validated before, unchanged since
            "invalid": len(bad),
            "examples": MetadataValue.md("\n".join(f"- {b}" for b in bad[:MAX_LISTED]) or "-"),
        },
    )


@asset_check(asset=results_table, description="Every reward is null (ungraded) or within [0, 1].")
def rewards_in_range(results_table: pl.DataFrame) -> AssetCheckResult:
    df = results_table
    out = df.filter(pl.col("reward").is_not_null() & ((pl.col("reward") < 0) | (pl.col("reward") > 1)))
    return AssetCheckResult(
        passed=out.is_empty(),
        metadata={
            "checked": df.height,
            "out_of_range": out.height,
            "examples": MetadataValue.md(
                "\n".join(
                    f"- {r['instance_id']} [{r['config_name']}#{r['rollout_index']}]: {r['reward']}"
                    for r in out.head(MAX_LISTED).iter_rows(named=True)
                )
                or "-"
            ),
        },
    )


def missing_partitions(
    run_dirs: dict[str, str], materialized: set[str], folder: FolderReader = read_folder
) -> list[str]:
    """Partitions some run (folder → its dataset) finished (a record `ResultsStore.finished` counts: no
    infrastructure or input error, its traj.json there) with no graded materialization; each folder's
    records read as `folder` gives them (analysis/cache.py: only what changed since the last refresh)."""
    missing = set()
    unfinished = sorted(str(s.value) for s in INFRA_STATUSES | INPUT_STATUSES)
    for run_dir, dataset in run_dirs.items():
        rows = folder(Path(run_dir)).filter(~pl.col("exit_status").is_in(unfinished))
        for instance_id, config_name, traj in rows.select("instance_id", "config_name", "traj_path").iter_rows():
            key = str(partition_key(dataset, instance_id, config_name))
            if key not in materialized and os.path.exists(traj):
                missing.add(key)
    return sorted(missing)


@asset_check(asset=results_table, description="No partition a recorded run finished is missing from graded results.")
def no_missing_partitions(
    context: AssetCheckExecutionContext, results_table: pl.DataFrame, output_store: OutputStore
) -> AssetCheckResult:
    df = results_table
    materialized = set(context.instance.get_materialized_partitions(GRADED_RESULTS))
    runs = dict(df.select("run_dir", "dataset").unique("run_dir").iter_rows())
    missing = missing_partitions(runs, materialized, RefreshCache.of(output_store.tables_dir()).folder)
    return AssetCheckResult(
        passed=not missing,
        metadata={
            "runs": df["run_dir"].n_unique(),
            "missing": len(missing),
            "examples": MetadataValue.md("\n".join(f"- `{m}`" for m in missing[:MAX_LISTED]) or "-"),
        },
    )
