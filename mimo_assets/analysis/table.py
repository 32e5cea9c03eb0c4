"""The results table: the latest graded materialization of every partition, joined to its records.

Materializations say where each partition's results.jsonl is (CLI runs write wherever `-o` points), so
one pass over the event log plus one read per run folder builds the table for every door. Which records
are a cell's result is `mimo_assets.cell_result.graded_records`, the rule the events follow too.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
from dagster import AssetRecordsFilter, DagsterInstance

from mimo_assets.asset_keys import GRADED_RESULTS
from mimo_assets.cell_result import graded_records, run_kind, source_of
from mimo_assets.partitions import split_key
from mimo_core.results import ResultRecord, ResultsStore

PAGE = 10_000

SCHEMA: dict[str, Any] = {
    "dataset": pl.String, "run_kind": pl.String, "instance_id": pl.String, "config_name": pl.String,
    "rollout_index": pl.Int64, "run_id": pl.String,
    "dataset_type": pl.String, "agent_type": pl.String, "model_name": pl.String, "exit_status": pl.String,
    "infra_error": pl.Boolean, "error_class": pl.String, "reward": pl.Float64, "passed": pl.Boolean,
    "judge_score": pl.Float64, "recalc": pl.String, "steps": pl.Int64, "prompt_tokens": pl.Int64,
    "completion_tokens": pl.Int64, "cached_tokens": pl.Int64, "reasoning_tokens": pl.Int64,
    "cost": pl.Float64, "duration_s": pl.Float64, "started_at": pl.String, "ended_at": pl.String,
    "grading": pl.String, "run_dir": pl.String, "traj_path": pl.String, "night": pl.String,
}
NIGHT_TAG = "mimoagent/date"


def row(
    record: ResultRecord, run_dir: Path, night: str | None = None, dataset: str | None = None,
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


def graded_by_night(instance: DagsterInstance) -> dict[str, dict[Cell, Path]]:
    """night → (dataset, instance, config, source) → the run folder of that night's latest graded
    materialization of that source (a gold recalc, a regrade, an agent's run: each keeps its own). The
    night is the `mimoagent/date` tag every door puts on its events (else the event's UTC date)."""
    nights: dict[str, dict[Cell, Path]] = {}
    cursor = None
    while True:
        result = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=GRADED_RESULTS), limit=PAGE, cursor=cursor, ascending=True,
        )
        for rec in result.records:
            mat = rec.asset_materialization
            if mat is None or mat.partition is None or "output_dir" not in mat.metadata:
                continue
            night = (mat.tags or {}).get(NIGHT_TAG) or datetime.fromtimestamp(rec.timestamp, UTC).date().isoformat()
            recalc = mat.metadata["recalc"].value if "recalc" in mat.metadata else None
            cell = (*split_key(mat.partition), source_of(str(recalc) if recalc else None))
            nights.setdefault(night, {})[cell] = Path(str(mat.metadata["output_dir"].value))
        if not result.has_more:
            return nights
        cursor = result.cursor


def collect_night(night: str, latest: dict[Cell, Path]) -> pl.DataFrame:
    """One night's table: for each partition and source graded that night, the records of its latest graded
    materialization's run folder (a run folder holds one dataset, so (instance, config) names a partition
    within it), by the one rule of a cell's result."""
    by_dir: dict[Path, list[Cell]] = {}
    for cell, run_dir in latest.items():
        by_dir.setdefault(run_dir, []).append(cell)
    rows = []
    for run_dir, cells in by_dir.items():
        records = ResultsStore(run_dir).load()
        for dataset, instance_id, config_name, source in cells:
            rows += [row(rec, run_dir, night, dataset)
                     for rec in graded_records(records, instance_id, config_name, source)]
    return frame(rows).sort("dataset", "run_kind", "config_name", "instance_id", "rollout_index")
