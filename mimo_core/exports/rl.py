"""`rl`: one row per model call with the token ids the endpoint returned, for policy-gradient training.

Read from agent_msgs/ (every call's exact request and response): the prompt's and the completion's
token ids and the completion's logprobs, in the spelling of whichever server sent them (vLLM, SGLang,
llama.cpp: `mimo_core/models/token_ids.py`). A rollout with any completed call lacking them is left out
whole and named in the report with the piece that is missing: retokenizing text would not give the ids
the policy sampled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from mimo_core.exports.report import ExportReport, write_parquet
from mimo_core.exports.source import ROLLOUT_COLUMNS, RolloutRef
from mimo_core.models.token_ids import token_fields
from mimo_core.records.model_calls import AgentMsgsError, iter_steps

FILE = "rl.parquet"
SCHEMA = {
    **ROLLOUT_COLUMNS,
    "step": pl.Int64,
    "call_index": pl.Int64,
    "finish_reason": pl.String,
    "prompt_token_ids": pl.List(pl.Int64),
    "completion_token_ids": pl.List(pl.Int64),
    "completion_logprobs": pl.List(pl.Float64),
    "loss_mask": pl.List(pl.Int8),
}


class MissingTokens(ValueError):
    """A rollout whose calls do not all carry token ids."""


def rl_rows(ref: RolloutRef) -> list[dict[str, Any]]:
    """The rollout's completed calls as rows; raises MissingTokens or AgentMsgsError saying why not."""
    msgs = ref.folder / "agent_msgs"
    if not msgs.is_dir():
        raise MissingTokens("no agent_msgs/ folder (no model call was recorded)")
    rows: list[dict[str, Any]] = []
    base = ref.columns()
    missing: list[str] = []
    for rec in iter_steps(msgs):
        choices = rec.response.get("choices")
        if not isinstance(choices, list) or not choices:  # a failed call: no completion to train on
            continue
        fields = token_fields(rec.response)
        if fields.prompt_ids is None or fields.completion_ids is None:
            why = " and ".join(fields.missing()) + (f" ({fields.server})" if fields.server else "")
            missing.append(f"step {rec.step}: {why}" + (f": {fields.prompt_error}" if fields.prompt_error else ""))
            continue
        prompt, completion = fields.prompt_ids, fields.completion_ids
        rows.append(
            {
                **base,
                "step": rec.step,
                "call_index": len(rows),
                "finish_reason": choices[0].get("finish_reason") if isinstance(choices[0], dict) else None,
                "prompt_token_ids": prompt,
                "completion_token_ids": completion,
                "completion_logprobs": fields.logprobs,
                "loss_mask": [0] * len(prompt) + [1] * len(completion),
            }
        )
    if missing:
        raise MissingTokens(
            f"{len(missing)} of {len(missing) + len(rows)} model calls lack token ids; first: "
            f"{missing[0]} (set model.return_token_ids: true; docs/exports.md says what each "
            "server returns)"
        )
    if not rows:
        raise MissingTokens("no completed model call")
    return rows


def export_rl(refs: list[RolloutRef], dest: Path, flt: object = None) -> ExportReport:
    path = dest / FILE
    report = ExportReport(format="rl", path=str(path))
    rows: list[dict[str, Any]] = []
    for ref in refs:
        try:
            got = rl_rows(ref)
        except (MissingTokens, AgentMsgsError) as e:
            report.skip(ref.name, str(e))
            continue
        rows.extend(got)
        report.rollouts += 1
    write_parquet(rows, SCHEMA, path)
    report.rows = len(rows)
    return report
