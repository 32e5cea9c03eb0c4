"""`sft`: one row per rollout, its conversation in OpenAI chat format, ready for a chat template.

`messages` is a list of structs (role, content, reasoning_content, tool_calls, tool_call_id, name) as
traj.json holds them, minus protocol-private items; `tools` is the OpenAI tools list as JSON text (tool
parameter schemas differ per tool, which a parquet struct cannot hold).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from mimo_core.exports.report import ExportReport, write_parquet
from mimo_core.exports.source import ROLLOUT_COLUMNS, RolloutRef
from mimo_core.trajectory import read_trajectory

FILE = "sft.parquet"

TOOL_CALL = pa.struct([("id", pa.string()), ("type", pa.string()),
                       ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])
MESSAGE = pa.struct([
    ("role", pa.string()), ("content", pa.string()), ("reasoning_content", pa.string()),
    ("tool_calls", pa.list_(TOOL_CALL)), ("tool_call_id", pa.string()), ("name", pa.string()),
])
SCHEMA = pa.schema([*ROLLOUT_COLUMNS, ("messages", pa.list_(MESSAGE)), ("tools", pa.string()),
                    ("steps", pa.int64()), ("cost", pa.float64())])


def sft_row(ref: RolloutRef) -> dict[str, Any]:
    """Raises ValueError (naming the file) when the trajectory cannot be read."""
    traj = read_trajectory(ref.folder / "traj.json")
    messages = []
    for m in traj.messages:
        d = m.to_openai()
        d.pop("provider_items", None)
        messages.append(d)
    return {**ref.columns(), "messages": messages,
            "tools": json.dumps([t.to_openai() for t in traj.tools], ensure_ascii=False),
            "steps": traj.steps, "cost": traj.cost}


def export_sft(refs: list[RolloutRef], dest: Path) -> ExportReport:
    path = dest / FILE
    report = ExportReport(format="sft", path=str(path))
    rows = []
    for ref in refs:
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
