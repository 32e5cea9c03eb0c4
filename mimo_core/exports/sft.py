"""`sft`: one row per rollout, its conversation in OpenAI chat format, ready for a chat template.

`messages` is a list of structs (role, content, reasoning_content, tool_calls, tool_call_id, name) as
traj.json holds them, minus protocol-private items; `tools` is the OpenAI tools list as JSON text (tool
parameter schemas differ per tool, which a parquet struct cannot hold).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from mimo_core.exports.report import ExportReport, write_parquet
from mimo_core.exports.source import ROLLOUT_COLUMNS, ExportFilter, RolloutRef
from mimo_core.records.trajectory import read_trajectory
from mimo_core.status import UNGRADED_STATUSES, ExitStatus

FILE = "sft.parquet"

TOOL_CALL = pl.Struct(
    {"id": pl.String, "type": pl.String, "function": pl.Struct({"name": pl.String, "arguments": pl.String})}
)
MESSAGE = pl.Struct(
    {
        "role": pl.String,
        "content": pl.String,
        "reasoning_content": pl.String,
        "tool_calls": pl.List(TOOL_CALL),
        "tool_call_id": pl.String,
        "name": pl.String,
    }
)
# Rollouts that ended in an error are no training target by default: their last turns are the failure
# (a CLI agent's synthetic "[API Error: 400 ...]" turn would become an assistant target).
ERROR_STATUSES = UNGRADED_STATUSES | {ExitStatus.MODEL_BAD_REQUEST, ExitStatus.AGENT_ERROR}
SCHEMA = {**ROLLOUT_COLUMNS, "messages": pl.List(MESSAGE), "tools": pl.String, "steps": pl.Int64, "cost": pl.Float64}


def sft_row(ref: RolloutRef) -> dict[str, Any]:
    """Raises ValueError (naming the file) when the trajectory cannot be read."""
    traj = read_trajectory(ref.folder / "traj.json")
    messages = []
    for m in traj.messages:
        d = m.to_openai()
        d.pop("provider_items", None)
        messages.append(d)
    return {
        **ref.columns(),
        "messages": messages,
        "tools": json.dumps([t.to_openai() for t in traj.tools], ensure_ascii=False),
        "steps": traj.steps,
        "cost": traj.cost,
    }


def export_sft(refs: list[RolloutRef], dest: Path, flt: ExportFilter | None = None) -> ExportReport:
    """Rollouts that ended in an error are left out (and listed) unless `include_errors` is set or the
    status filter names their status."""
    path = dest / FILE
    report = ExportReport(format="sft", path=str(path))
    flt = flt or ExportFilter()
    rows = []
    for ref in refs:
        status = ref.record.exit_status
        if status in ERROR_STATUSES and not flt.include_errors and status not in flt.statuses:
            report.skip(ref.name, f"ended {status.value} (an error: --include-errors exports it)")
            continue
        try:
            row = sft_row(ref)
        except ValueError as e:
            report.skip(ref.name, str(e))
            continue
        if not row["messages"]:
            report.skip(ref.name, f"no messages (ended {ref.record.exit_status.value} before the agent ran)")
            continue
        rows.append(row)
    write_parquet(rows, SCHEMA, path)
    report.rollouts = report.rows = len(rows)
    return report
