"""The results table: the latest graded materialization of every partition, joined to its records.

Materializations say where each partition's results.jsonl is (CLI runs write wherever `-o` points), so
one pass over the event log plus one read per run folder builds the table for every door. Which records
are a cell's result is `mimo_assets.cell_result.FolderIndex.graded`, the rule the events follow too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
from dagster import DagsterInstance

from mimo_assets.asset_keys import GRADED_RESULTS
from mimo_assets.cell_result import run_kind, source_of
from mimo_assets.dagster_private import AssetEventSummary, asset_event_summaries
from mimo_assets.eventlog.events import FAILED
from mimo_assets.partitions import split_key
from mimo_core.records.results import ResultRecord, ResultsStore

SCHEMA: dict[str, Any] = {
    "dataset": pl.String,
    "run_kind": pl.String,
    "instance_id": pl.String,
    "config_name": pl.String,
    "rollout_index": pl.Int64,
    "run_id": pl.String,
    "dataset_type": pl.String,
    "agent_type": pl.String,
    "model_name": pl.String,
    "exit_status": pl.String,
    "infra_error": pl.Boolean,
    "error_class": pl.String,
    "reward": pl.Float64,
    "passed": pl.Boolean,
    "judge_score": pl.Float64,
    "recalc": pl.String,
    "steps": pl.Int64,
    "prompt_tokens": pl.Int64,
    "completion_tokens": pl.Int64,
    "cached_tokens": pl.Int64,
    "reasoning_tokens": pl.Int64,
    "cost": pl.Float64,
    "duration_s": pl.Float64,
    "started_at": pl.String,
    "ended_at": pl.String,
    "grading": pl.String,
    "run_dir": pl.String,
    "traj_path": pl.String,
    "night": pl.String,
}
NIGHT_TAG = "mimoagent/date"


def row(
    record: ResultRecord,
    run_dir: Path,
    night: str | None = None,
    dataset: str | None = None,
) -> dict[str, Any]:
    data = record.model_dump(exclude={"error", "output_dir"})
    data["night"], data["dataset"], data["run_kind"] = night, dataset, run_kind(record)
    data["grading"] = json.dumps(record.grading, sort_keys=True, default=str)
    data["run_dir"] = str(run_dir)
    data["traj_path"] = str(run_dir / record.output_dir / "traj.json")
    return {k: data.get(k) for k in SCHEMA}


def frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=SCHEMA, orient="row") if rows else pl.DataFrame(schema=SCHEMA)


def frame_from_run_dirs(run_dirs: list[Path]) -> pl.DataFrame:
    """Every record of the given run folders (the tests and the analytics of a single CLI run)."""
    rows = [row(r, d.resolve()) for d in run_dirs for r in ResultsStore(d).load().values()]
    return frame(rows)


Cell = tuple[str, str, str, str]  # (dataset, instance, config, source: cell_result.source_of)

# A run folder's records as table rows (`night` and `dataset` unset), with the source of each
# (cell_result.source_of): what a night's table joins its cells to (collect_night).
FOLDER_SCHEMA: dict[str, Any] = {**SCHEMA, "source": pl.String}
# Graded materializations (or `failed` observations) of partitions, one row each in storage order.
EVENT_SCHEMA: dict[str, Any] = {
    "storage_id": pl.Int64,
    "run_id": pl.String,  # the Dagster run's
    "night": pl.String,
    "dataset": pl.String,
    "instance_id": pl.String,
    "config_name": pl.String,
    "source": pl.String,
    "output_dir": pl.String,
}
_CELL = ["dataset", "instance_id", "config_name", "source"]


def _night(tags: dict[str, str] | None, timestamp: float) -> str:
    return (tags or {}).get(NIGHT_TAG) or datetime.fromtimestamp(timestamp, UTC).date().isoformat()


def folder_frame(records: Iterable[ResultRecord], run_dir: Path) -> pl.DataFrame:
    """Rows (FOLDER_SCHEMA) of a run folder's records, in their order."""
    rows = [{**row(r, run_dir), "source": source_of(r.recalc)} for r in records]
    return pl.DataFrame(rows, schema=FOLDER_SCHEMA, orient="row") if rows else pl.DataFrame(schema=FOLDER_SCHEMA)


def read_folder(run_dir: Path) -> pl.DataFrame:
    """Every record of a run folder as rows (one pass); analysis/cache.py keeps them between refreshes."""
    return folder_frame(ResultsStore(run_dir).load().values(), run_dir)


FolderReader = Callable[[Path], pl.DataFrame]


def event_frame(summaries: Iterable[AssetEventSummary], failed: bool = False) -> pl.DataFrame:
    """The events that name a partition and its run folder (with `failed`: only `failed` observations,
    eventlog/events.failure_observations), as EVENT_SCHEMA rows, in the order given (storage order)."""
    rows = []
    for event in summaries:
        meta = event.metadata
        if event.partition is None or meta.get("output_dir") is None or (failed and meta.get("status") != FAILED):
            continue
        recalc = meta.get("recalc")
        night = _night(event.tags, event.timestamp)
        cell = (*split_key(event.partition), source_of(str(recalc) if recalc else None))
        rows.append((event.storage_id, event.run_id, night, *cell, str(meta["output_dir"])))
    return pl.DataFrame(rows, schema=EVENT_SCHEMA, orient="row")


def _latest_by_night(events: pl.DataFrame) -> dict[str, dict[Cell, tuple[int, Path]]]:
    """night → cell → (storage id, run folder) of its latest event that night."""
    nights: dict[str, dict[Cell, tuple[int, Path]]] = {}
    paths: dict[str, Path] = {}
    ordered = events.sort("storage_id", maintain_order=True)
    for sid, night, dataset, instance_id, config_name, source, out in ordered.select(
        "storage_id", "night", *_CELL, "output_dir"
    ).iter_rows():
        path = paths.get(out) or paths.setdefault(out, Path(out))
        nights.setdefault(night, {})[(dataset, instance_id, config_name, source)] = (sid, path)
    return nights


def graded_events(
    instance: DagsterInstance, events: pl.DataFrame | None = None
) -> dict[str, dict[Cell, tuple[int, Path]]]:
    """night → cell → (storage id, run folder) of that night's latest graded materialization of the cell
    (each event read once, as a summary: dagster_private.asset_event_summaries; or `events`, their
    event_frame, which analysis/cache.py keeps between refreshes)."""
    if events is None:
        events = event_frame(asset_event_summaries(instance, GRADED_RESULTS))
    return _latest_by_night(events)


def graded_by_night(instance: DagsterInstance) -> dict[str, dict[Cell, Path]]:
    """night → (dataset, instance, config, source) → the run folder of that night's latest graded
    materialization of that source (a gold recalc, a regrade, an agent's run: each keeps its own). The
    night is the `mimoagent/date` tag every door puts on its events (else the event's UTC date)."""
    return {
        night: {cell: path for cell, (_, path) in cells.items()} for night, cells in graded_events(instance).items()
    }


def failed_by_night(
    instance: DagsterInstance,
    graded: dict[str, dict[Cell, tuple[int, Path]]] | None = None,
    failures: pl.DataFrame | None = None,
) -> dict[str, dict[Cell, Path]]:
    """night → cell → the run folder of its latest failure (the `failed` observation a partition with no
    result gets, eventlog/events.failure_observations), for cells whose failure came after that night's
    graded result, if any: their infrastructure-error rollouts ran and cost, so the status and usage tables
    count them. `failures`: their event_frame (failed=True), if already at hand."""
    graded = graded_events(instance) if graded is None else graded
    if failures is None:
        failures = event_frame(asset_event_summaries(instance, GRADED_RESULTS, observations=True), failed=True)
    out: dict[str, dict[Cell, Path]] = {}
    for night, cells in _latest_by_night(failures).items():
        done = graded.get(night, {})
        out[night] = {cell: path for cell, (sid, path) in cells.items() if cell not in done or done[cell][0] < sid}
    return out


def collect_night(
    night: str,
    latest: dict[Cell, Path],
    failed: dict[Cell, Path] | None = None,
    folder: FolderReader = read_folder,
) -> pl.DataFrame:
    """One night's table: for each partition and source graded that night, the records of its latest graded
    materialization's run folder (a run folder holds one dataset, so (instance, config) names a partition
    within it), by the one rule of a cell's result (its graded records, and with them, K > 1, that folder's
    infrastructure-error rollouts of the cell; none when it has no graded record left); for each cell that
    failed that night (`failed`, failed_by_night), its infrastructure-error rollouts. Rows with
    `infra_error` are never a result (stats.scored leaves them out of every rate), but the status and usage
    tables count them. Each folder's rows (`folder`: read_folder, or analysis/cache.py's kept copy) are
    joined to its cells at once: linear in the records."""
    by_dir: dict[Path, list[tuple[str, str, str, str, bool]]] = {}
    for (dataset, instance_id, config_name, source), run_dir in latest.items():
        by_dir.setdefault(run_dir, []).append((dataset, instance_id, config_name, source, True))
    for cell, run_dir in (failed or {}).items():
        if cell not in latest:
            by_dir.setdefault(run_dir, []).append((*cell, False))
    tables = []
    for run_dir, cells in by_dir.items():
        wanted = pl.DataFrame(cells, schema={**{k: pl.String for k in _CELL}, "graded": pl.Boolean}, orient="row")
        rows = folder(run_dir).drop("dataset", "night").join(wanted, on=_CELL[1:], how="inner")
        has_result = (~pl.col("infra_error")).any().over(["dataset", *_CELL[1:]])
        rows = rows.filter(pl.when(pl.col("graded")).then(has_result).otherwise(pl.col("infra_error")))
        tables.append(rows.with_columns(night=pl.lit(night, dtype=pl.String)).select(list(SCHEMA)))
    df = pl.concat(tables, how="vertical") if tables else frame([])
    return df.sort("dataset", "run_kind", "config_name", "instance_id", "rollout_index", maintain_order=True)
