"""Evaluation statistics over the results table (polars). Pure functions: no Dagster, easy to test.

Every table is keyed by `dataset`, `run_kind` (a model rollout, the oracle agent, a recalc of the gold
patch, a regrade of saved submissions: table.run_kind) and `config_name`, so nothing pools what must not
be pooled; a table that pools says so in its title. The rates are mimo_core.records.rates' (docs/dagster.md#the-rates):
infrastructure errors are counted (`errors`) and in the rate of attempted, never in the rate of graded, the
intervals or pass@k; the status and usage tables count every rollout. A rollout counts as passed only when the
verifier said so (`passed` is True); ungraded counts as failed.
"""

from __future__ import annotations

import math
from typing import Any, cast

import polars as pl

from mimo_core.records.rates import (
    ATTEMPTED,
    ERRORS,
    GRADED,
    LABELS,
    PASS_RATE_OF_ATTEMPTED,
    PASS_RATE_OF_GRADED,
    PASSED,
)

Z95 = 1.959963984540054
KEYS = ("dataset", "run_kind", "config_name")  # what every table is keyed by


def wilson_interval(passed: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval, clamped to [0, 1] and always holding the observed rate: at 0/n and n/n the
    formula's bound comes out a rounding error away from it (0.9999999999999999 for 1008/1008), which
    would make an error bar negative."""
    if n == 0:
        return (0.0, 1.0)
    p = passed / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return (0.0 if passed == 0 else min(low, p), 1.0 if passed == n else max(high, p))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} rollouts per instance, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def keyed(df: pl.DataFrame) -> pl.DataFrame:
    """The table with every key column present (a frame built without Dagster may lack dataset/run_kind)."""
    missing = {k: pl.lit("-") for k in KEYS if k not in df.columns}
    out = df.with_columns(**missing) if missing else df
    return out.with_columns(*(pl.col(k).fill_null("-") for k in KEYS))


def scored(df: pl.DataFrame) -> pl.DataFrame:
    """Rollouts that count: no infra error; `ok` is 1 for a pass, else 0."""
    return keyed(df).filter(~pl.col("infra_error")).with_columns(ok=pl.col("passed").fill_null(False).cast(pl.Int64))


def _with_intervals(agg: pl.DataFrame) -> pl.DataFrame:
    """Both rates (mimo_core.records.rates) from `attempted`, `errors` and `passed`, and the Wilson interval of the
    rate of graded; a group with nothing graded has no rate and the interval [0, 1]."""
    agg = agg.with_columns(graded=pl.col(ATTEMPTED) - pl.col(ERRORS))
    intervals = [wilson_interval(p, n) for p, n in zip(agg[PASSED], agg[GRADED], strict=True)]
    return agg.with_columns(
        **{PASS_RATE_OF_GRADED: pl.when(pl.col(GRADED) > 0).then(pl.col(PASSED) / pl.col(GRADED))},
        ci_low=pl.Series([lo for lo, _ in intervals], dtype=pl.Float64),
        ci_high=pl.Series([hi for _, hi in intervals], dtype=pl.Float64),
        **{PASS_RATE_OF_ATTEMPTED: pl.when(pl.col(ATTEMPTED) > 0).then(pl.col(PASSED) / pl.col(ATTEMPTED))},
    )


def _counted(df: pl.DataFrame) -> pl.DataFrame:
    """Every rollout of the table with `ok` (passed and graded) and `err` (an infrastructure error)."""
    return keyed(df).with_columns(
        err=pl.col("infra_error").fill_null(False),
        ok=(pl.col("passed").fill_null(False) & ~pl.col("infra_error").fill_null(False)).cast(pl.Int64),
    )


def _rate_aggs() -> list[pl.Expr]:
    return [
        pl.len().alias(ATTEMPTED),
        pl.col("err").sum().cast(pl.Int64).alias(ERRORS),
        pl.col("ok").sum().alias(PASSED),
    ]


def pass_rates(df: pl.DataFrame) -> pl.DataFrame:
    """Per dataset, kind of run and config: attempted, errors, graded, passed, the pass rate (of graded) with
    its 95 % Wilson interval and the pass rate (of attempted) (mimo_core.records.rates)."""
    agg = (
        _counted(df)
        .group_by(*KEYS)
        .agg(*_rate_aggs(), instances=pl.col("instance_id").filter(~pl.col("err")).n_unique())
        .sort(*KEYS)
    )
    return _with_intervals(agg).select(
        *KEYS,
        ATTEMPTED,
        ERRORS,
        GRADED,
        "instances",
        PASSED,
        PASS_RATE_OF_GRADED,
        "ci_low",
        "ci_high",
        PASS_RATE_OF_ATTEMPTED,
    )


def pass_rate_by_night(df: pl.DataFrame) -> pl.DataFrame:
    """The same per night, dataset, kind of run and config: the trend."""
    agg = _counted(df).group_by("night", *KEYS).agg(*_rate_aggs()).sort("night", *KEYS)
    return _with_intervals(agg).select(
        "night",
        *KEYS,
        ATTEMPTED,
        ERRORS,
        GRADED,
        PASSED,
        PASS_RATE_OF_GRADED,
        "ci_low",
        "ci_high",
        PASS_RATE_OF_ATTEMPTED,
    )


def labelled(df: pl.DataFrame) -> pl.DataFrame:
    """The columns under the names shown for them (mimo_core.records.rates.LABELS), for the UI's tables."""
    return df.rename({c: LABELS[c] for c in df.columns if c in LABELS and LABELS[c] != c})


def pass_at_k_table(df: pl.DataFrame, ks: list[int] | None = None) -> pl.DataFrame:
    """Mean over instances of unbiased pass@k per dataset, kind and config, for each k up to the fewest
    rollouts any of its instances has."""
    per_instance = scored(df).group_by(*KEYS, "instance_id").agg(n=pl.len(), c=pl.col("ok").sum())
    rows: list[dict[str, Any]] = []
    for key, group in per_instance.group_by(*KEYS):
        max_k = cast(int, group["n"].min())  # a count (pl.len()) per instance: an int
        for k in ks or range(1, max_k + 1):
            if k > max_k:
                continue
            values = [pass_at_k(n, c, k) for n, c in zip(group["n"], group["c"], strict=True)]
            rows.append(
                {
                    **dict(zip(KEYS, key, strict=True)),
                    "k": k,
                    "instances": len(values),
                    "pass_at_k": sum(values) / len(values),
                }
            )
    schema = {**{k: pl.String for k in KEYS}, "k": pl.Int64, "instances": pl.Int64, "pass_at_k": pl.Float64}
    return pl.DataFrame(rows, schema=schema).sort(*KEYS, "k")


def usage(df: pl.DataFrame) -> pl.DataFrame:
    """Cost, tokens, steps and duration per dataset, kind and config (every rollout, infra errors too:
    they cost)."""
    return (
        keyed(df)
        .with_columns(tokens=pl.col("prompt_tokens") + pl.col("completion_tokens"))
        .group_by(*KEYS)
        .agg(
            rollouts=pl.len(),
            cost_total=pl.col("cost").sum(),
            cost_mean=pl.col("cost").mean(),
            tokens_total=pl.col("tokens").sum(),
            tokens_mean=pl.col("tokens").mean(),
            steps_mean=pl.col("steps").mean(),
            steps_median=pl.col("steps").median(),
            duration_mean_s=pl.col("duration_s").mean(),
        )
        .sort(*KEYS)
    )


def exit_statuses(df: pl.DataFrame) -> pl.DataFrame:
    """How rollouts ended, per dataset, kind and config."""
    counts = keyed(df).group_by(*KEYS, "exit_status").agg(count=pl.len())
    if counts.is_empty():
        return pl.DataFrame(schema={k: pl.String for k in KEYS})
    wide = counts.pivot(on="exit_status", index=list(KEYS), values="count").fill_null(0)
    return wide.select(*KEYS, *sorted(c for c in wide.columns if c not in KEYS)).sort(*KEYS)


def to_markdown(df: pl.DataFrame, digits: int = 3) -> str:
    """A GitHub table, which the Dagster UI renders in the metadata panel."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.{digits}f}"
        if isinstance(v, list):
            return ", ".join(map(str, v)) or "-"
        return "-" if v is None else str(v).replace("|", "\\|")

    if not df.columns:
        return "_no rows_"
    head = "| " + " | ".join(df.columns) + " |"
    rule = "| " + " | ".join("---" for _ in df.columns) + " |"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.iter_rows()]
    return "\n".join([head, rule, *body]) if body else head + "\n" + rule + "\n\n_no rows_"
