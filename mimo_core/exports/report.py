"""What an export wrote and which rollouts it left out and why, written beside the export as JSON."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from mimo_core.base.atomic_files import atomic_write_text


class Skipped(BaseModel):
    rollout: str  # the rollout's folder
    reason: str


class ExportReport(BaseModel):
    format: str
    path: str  # the parquet file or the folder of ATIF files
    rollouts: int = 0  # rollouts exported
    rows: int = 0  # rows (sft: rollouts, rl: model calls) or files (atif)
    skipped: list[Skipped] = Field(default_factory=list)

    def skip(self, rollout: str, reason: str) -> None:
        self.skipped.append(Skipped(rollout=rollout, reason=reason))

    def write(self, dest: Path) -> Path:
        path = dest / f"{self.format}_report.json"
        atomic_write_text(path, self.model_dump_json(indent=2) + "\n")
        return path

    def reasons(self) -> str:
        """The reasons rollouts were left out, counted (for a one-line message)."""
        if not self.skipped:
            return ""
        counts: dict[str, int] = {}
        for s in self.skipped:
            key = s.reason.split(":", 1)[0][:120]
            counts[key] = counts.get(key, 0) + 1
        return " (" + "; ".join(f"{n}: {why}" for why, n in sorted(counts.items(), key=lambda kv: -kv[1])[:3]) + ")"

    def summary(self) -> str:
        head = f"{self.format}: {self.rollouts} rollouts, {self.rows} rows -> {self.path}"
        return head + (
            f"; {len(self.skipped)} rollouts left out (see {self.format}_report.json)" if self.skipped else ""
        )


def write_parquet(rows: list[dict[str, Any]], schema: dict[str, Any], path: Path) -> None:
    """Atomically, with a fixed schema (so an empty export still has its columns). Through polars:
    pyarrow's row builders import pandas (seconds) on first use."""
    import polars as pl

    path.parent.mkdir(parents=True, exist_ok=True)
    # Column by column: several times faster than polars' row-dict builder on long token-id lists.
    df = pl.DataFrame({k: [r.get(k) for r in rows] for k in schema}, schema=schema)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if not rows:  # nothing to write: a 0-row file is what loaders choke on (write_export says why)
        return
    df.write_parquet(tmp)
    os.replace(tmp, path)
