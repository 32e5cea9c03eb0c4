"""results table: one parquet table per night (polars), never mixed across nights; the latest night is
the default view: the asset's value, stored by the tables IO manager (`tables/results_table.parquet`) and
loaded by it into every analytics asset and check."""

import os
import time

import polars as pl
from dagster import AssetExecutionContext, MetadataValue, Output, asset

from mimo_assets.analysis.cache import RefreshCache
from mimo_assets.analysis.stats import to_markdown
from mimo_assets.analysis.table import SCHEMA, collect_night, failed_by_night, graded_events
from mimo_assets.asset_keys import ANALYTICS_GROUP, GRADED_RESULTS, JUDGE_SCORES, RESULTS_TABLE, ROLLOUTS
from mimo_assets.dagster_private import warm_partition_status
from mimo_assets.eventlog.events import CODE_VERSION
from mimo_assets.partitions import rollout_partitions
from resources import OutputStore

TABLES_IO_MANAGER = "tables_io_manager"
RESULTS_PARQUET = "results_table.parquet"  # where resources.TablesIOManager stores it
NIGHTS_DIR = "nights"


def write_parquet(df: pl.DataFrame, path: os.PathLike[str]) -> None:
    """Atomically: a reader (the UI, a notebook) never sees half a table."""
    tmp = f"{path}.tmp-{os.getpid()}"
    df.write_parquet(tmp)
    os.replace(tmp, path)


@asset(
    key=RESULTS_TABLE,
    group_name=ANALYTICS_GROUP,
    deps=[GRADED_RESULTS],
    kinds={"polars", "parquet"},
    code_version=CODE_VERSION,
    io_manager_key=TABLES_IO_MANAGER,
)
def results_table(context: AssetExecutionContext, output_store: OutputStore) -> Output[pl.DataFrame]:
    """Each night's latest graded partitions with their records, and the infrastructure-error rollouts of
    its failed partitions and of graded ones (`infra_error`: never counted in a rate)
    (`tables/nights/<night>.parquet`, one file per night: a new night never rewrites an earlier one); the
    asset's value is the latest night. Rows carry `night`, `run_id` and `run_dir`, so one
    run's results are a filter away. Reads what changed since the last refresh (analysis/cache.py): the
    events stored since, the lines appended to each run folder's results.jsonl since; `parsed` says how
    many. Then brings the UI's partition status of the partitioned assets up to date (`partition_status`:
    those it updated), so the first view of their partitions after a run does not wait for it."""
    cache = RefreshCache.of(output_store.tables_dir())
    events = graded_events(context.instance, cache.events(context.instance))
    failed = failed_by_night(context.instance, events, cache.events(context.instance, failed=True))
    nights = {night: {cell: path for cell, (_, path) in cells.items()} for night, cells in events.items()}
    for night in failed:
        nights.setdefault(night, {})
    folder = output_store.tables_dir() / NIGHTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    latest = max(nights) if nights else None
    df = pl.DataFrame(schema=SCHEMA)
    for night, parts in sorted(nights.items()):
        table = collect_night(night, parts, failed.get(night), cache.folder)
        write_parquet(table, folder / f"{night}.parquet")
        if night == latest:
            df = table
    path = output_store.tables_dir() / RESULTS_PARQUET
    started = time.process_time()
    warmed = warm_partition_status(context.instance, [ROLLOUTS, JUDGE_SCORES, GRADED_RESULTS], rollout_partitions)
    warm_s = round(time.process_time() - started, 2)
    return Output(
        df,
        metadata={
            "night": latest or "-",
            "nights": MetadataValue.json({n: str(folder / f"{n}.parquet") for n in sorted(nights)}),
            "path": MetadataValue.path(str(path)),
            "rows": df.height,
            "rollouts": df.height,
            "infra_errors": int(df["infra_error"].sum()),
            "partitions": df.select("dataset", "instance_id", "config_name").unique().height,
            "runs": sorted(df["run_id"].unique().to_list()),
            "datasets": sorted(df["dataset"].unique().to_list()),
            # the events and records this refresh parsed (the rest: kept from the last one)
            "parsed": MetadataValue.json({k: cache.read[k] for k in ("records", "events")}),
            "partition_status": MetadataValue.json({"updated": [k.to_user_string() for k in warmed], "cpu_s": warm_s}),
            "run_kinds": sorted(df["run_kind"].unique().to_list()),
            "configs": sorted(df["config_name"].unique().to_list()),
            "preview": MetadataValue.md(
                to_markdown(
                    df.select(
                        "dataset",
                        "run_kind",
                        "instance_id",
                        "config_name",
                        "rollout_index",
                        "exit_status",
                        "reward",
                        "steps",
                        "cost",
                    ).head(20)
                )
            ),
        },
    )
