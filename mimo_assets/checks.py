"""Asset checks on the results table: trajectories validate, rewards are in range, nothing is missing."""

import polars as pl
from dagster import AssetCheckExecutionContext, AssetCheckResult, MetadataValue, asset_check

from mimo_assets.asset_keys import GRADED_RESULTS
from mimo_assets.assets.results import results_table
from mimo_assets.partitions import partition_key
from mimo_core.records.results import ResultsStore
from mimo_core.records.trajectory import read_trajectory

MAX_LISTED = 20


def invalid_trajectories(paths: list[str]) -> list[str]:
    bad = []
    for path in paths:
        try:
            read_trajectory(path)  # any schema version this code wrote
        except ValueError as e:
            bad.append(f"{path}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    return bad


@asset_check(asset=results_table, description="Every rollout's traj.json exists and validates against the schema.")
def trajectories_validate(results_table: pl.DataFrame) -> AssetCheckResult:
    df = results_table.filter(~pl.col("infra_error"))  # the results; an infrastructure error may have none
    bad = invalid_trajectories(df["traj_path"].to_list())
    return AssetCheckResult(
        passed=not bad,
        metadata={
            "checked": df.height,
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


def missing_partitions(run_dirs: dict[str, str], materialized: set[str]) -> list[str]:
    """Partitions some run (folder → its dataset) finished (a non-infra record in its results.jsonl) with
    no graded materialization."""
    missing = set()
    for run_dir, dataset in run_dirs.items():
        for rec in ResultsStore(run_dir).finished().values():
            key = str(partition_key(dataset, rec.instance_id, rec.config_name))
            if key not in materialized:
                missing.add(key)
    return sorted(missing)


@asset_check(asset=results_table, description="No partition a recorded run finished is missing from graded results.")
def no_missing_partitions(context: AssetCheckExecutionContext, results_table: pl.DataFrame) -> AssetCheckResult:
    df = results_table
    materialized = set(context.instance.get_materialized_partitions(GRADED_RESULTS))
    runs = dict(df.select("run_dir", "dataset").unique("run_dir").iter_rows())
    missing = missing_partitions(runs, materialized)
    return AssetCheckResult(
        passed=not missing,
        metadata={
            "runs": df["run_dir"].n_unique(),
            "missing": len(missing),
            "examples": MetadataValue.md("\n".join(f"- `{m}`" for m in missing[:MAX_LISTED]) or "-"),
        },
    )
