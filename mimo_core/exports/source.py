"""Which rollouts an export reads: the records of one or more output folders, filtered by status,
reward and config, each with the folder its files are in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from mimo_core.errors import ConfigError
from mimo_core.records.results import RESULTS_FILE, ResultRecord, ResultsStore
from mimo_core.status import ExitStatus

# The columns every parquet export starts with (RolloutRef.columns).
ROLLOUT_COLUMNS: dict[str, Any] = {
    "run_id": pl.String,
    "instance_id": pl.String,
    "config_name": pl.String,
    "rollout_index": pl.Int64,
    "model_name": pl.String,
    "exit_status": pl.String,
    "reward": pl.Float64,
    "passed": pl.Boolean,
    "run_dir": pl.String,
    "rollout_dir": pl.String,
}


class ExportFilter(BaseModel):
    """Rollouts to keep; an unset field keeps everything. A reward bound drops ungraded rollouts."""

    model_config = ConfigDict(extra="forbid")

    statuses: list[ExitStatus] = Field(default_factory=list, description="keep only these exit statuses")
    min_reward: float | None = None
    max_reward: float | None = None
    configs: list[str] = Field(default_factory=list, description="keep only these config names")
    include_errors: bool = Field(False, description="sft: also export rollouts that ended in an error")

    def keeps(self, rec: ResultRecord) -> bool:
        if self.statuses and rec.exit_status not in self.statuses:
            return False
        if self.configs and rec.config_name not in self.configs:
            return False
        if self.min_reward is not None and (rec.reward is None or rec.reward < self.min_reward):
            return False
        return not (self.max_reward is not None and (rec.reward is None or rec.reward > self.max_reward))


@dataclass(frozen=True)
class RolloutRef:
    """One finished rollout: its results.jsonl record and the run folder holding it."""

    run_dir: Path
    record: ResultRecord

    @property
    def folder(self) -> Path:
        return self.run_dir / self.record.output_dir

    @property
    def name(self) -> str:
        """`run_dir/instance/config/k`, as reports name a rollout."""
        return str(self.folder)

    def columns(self) -> dict[str, Any]:
        """The columns every export row starts with: who, where, and how it ended."""
        r = self.record
        return {
            "run_id": r.run_id,
            "instance_id": r.instance_id,
            "config_name": r.config_name,
            "rollout_index": r.rollout_index,
            "model_name": r.model_name,
            "exit_status": r.exit_status.value,
            "reward": r.reward,
            "passed": r.passed,
            "run_dir": str(self.run_dir),
            "rollout_dir": r.output_dir,
        }


def check_output_dir(path: Path) -> list[ResultRecord]:
    """The records of an output folder, or a one-line ConfigError saying why it is not one to export."""
    if not path.is_dir():
        raise ConfigError(f"{path}: not a folder")
    if not (path / RESULTS_FILE).is_file():
        raise ConfigError(f"{path}: not an output folder (no {RESULTS_FILE}; give the -o folder of a run)")
    records = list(ResultsStore(path).load().values())
    if not records:
        raise ConfigError(f"{path}: no finished rollouts in {RESULTS_FILE}: nothing to export")
    return records


def select_rollouts(run_dirs: Iterable[Path], flt: ExportFilter | None = None) -> list[RolloutRef]:
    """The rollouts of `run_dirs` the filter keeps, sorted by (instance, config, k)."""
    flt = flt or ExportFilter()
    refs = [
        RolloutRef(d, rec)
        for d in {Path(p).resolve(): None for p in run_dirs}
        for rec in check_output_dir(d)
        if flt.keeps(rec)
    ]
    refs.sort(key=lambda r: (*r.record.key, str(r.run_dir)))
    return refs


def select_latest(
    latest: Mapping[tuple[str, str], Path],
    flt: ExportFilter | None = None,
) -> tuple[list[RolloutRef], dict[str, str]]:
    """The rollouts of each (instance, config) pair from the run folder `latest` names for it (Dagster's
    latest graded materialization of each partition), filtered and sorted like `select_rollouts`; and the
    run folders that can no longer be read, with why (a deleted old run must not stop every export)."""
    flt = flt or ExportFilter()
    by_dir: dict[Path, set[tuple[str, str]]] = {}
    for pair, run_dir in latest.items():
        by_dir.setdefault(Path(run_dir).resolve(), set()).add(pair)
    refs: list[RolloutRef] = []
    unreadable: dict[str, str] = {}
    for d, pairs in by_dir.items():
        try:
            records = check_output_dir(d)
        except ConfigError as e:
            unreadable[str(d)] = f"{e} ({len(pairs)} partitions)"
            continue
        refs += [RolloutRef(d, r) for r in records if (r.instance_id, r.config_name) in pairs and flt.keeps(r)]
    refs.sort(key=lambda r: (*r.record.key, str(r.run_dir)))
    return refs, unreadable
