"""Evaluation statistics over the results table (polars). Pure functions: no Dagster, easy to test.

Infra-error rollouts are excluded everywhere: they say nothing about the agent and are redone on resume.
A rollout counts as passed only when the verifier said so (`passed` is True); ungraded counts as failed.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

Z95 = 1.959963984540054


def wilson_interval(passed: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval: stays inside [0, 1] and behaves at 0/n and n/n, unlike the normal one."""
    if n == 0:
        return (0.0, 1.0)
    p = passed / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} rollouts per instance, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def scored(df: pl.DataFrame) -> pl.DataFrame:
    """Rollouts that count: no infra error; `ok` is 1 for a pass, else 0. When the table holds several
    datasets, `instance_id` becomes `dataset/instance` (as in partition keys), so an id two datasets
    share is two instances to every per-instance figure (pass@k, paired A/B)."""
    if "dataset" in df.columns and df["dataset"].drop_nulls().n_unique() > 1:
        df = df.with_columns(instance_id=pl.col("dataset").fill_null("") + "/" + pl.col("instance_id"))
    return df.filter(~pl.col("infra_error")).with_columns(
        ok=pl.col("passed").fill_null(False).cast(pl.Int64)
    )


def pass_rate_by_config(df: pl.DataFrame) -> pl.DataFrame:
    agg = (
        scored(df).group_by("config_name")
        .agg(rollouts=pl.len(), instances=pl.col("instance_id").n_unique(), passed=pl.col("ok").sum())
        .sort("config_name")
    )
    intervals = [wilson_interval(p, n) for p, n in zip(agg["passed"], agg["rollouts"], strict=False)]
    return agg.with_columns(
        pass_rate=pl.col("passed") / pl.col("rollouts"),
        ci_low=pl.Series([lo for lo, _ in intervals], dtype=pl.Float64),
        ci_high=pl.Series([hi for _, hi in intervals], dtype=pl.Float64),
    )


def pass_rate_by_night(df: pl.DataFrame) -> pl.DataFrame:
    """Pass rate per config per night with its Wilson interval: the trend."""
    agg = (scored(df).group_by("night", "config_name")
           .agg(rollouts=pl.len(), passed=pl.col("ok").sum()).sort("night", "config_name"))
    intervals = [wilson_interval(p, n) for p, n in zip(agg["passed"], agg["rollouts"], strict=False)]
    return agg.with_columns(
        pass_rate=pl.col("passed") / pl.col("rollouts"),
        ci_low=pl.Series([lo for lo, _ in intervals], dtype=pl.Float64),
        ci_high=pl.Series([hi for _, hi in intervals], dtype=pl.Float64),
    )


def pass_at_k_by_config(df: pl.DataFrame, ks: list[int] | None = None) -> pl.DataFrame:
    """Mean over instances of unbiased pass@k, for each k up to the fewest rollouts any instance has."""
    per_instance = scored(df).group_by("config_name", "instance_id").agg(n=pl.len(), c=pl.col("ok").sum())
    rows: list[dict[str, Any]] = []
    for (config,), group in per_instance.group_by("config_name"):
        max_k = int(group["n"].min())
        for k in ks or range(1, max_k + 1):
            if k > max_k:
                continue
            values = [pass_at_k(n, c, k) for n, c in zip(group["n"], group["c"], strict=False)]
            rows.append({"config_name": config, "k": k, "instances": len(values),
                         "pass_at_k": sum(values) / len(values)})
    schema = {"config_name": pl.String, "k": pl.Int64, "instances": pl.Int64, "pass_at_k": pl.Float64}
    return pl.DataFrame(rows, schema=schema).sort("config_name", "k")


def usage_by_config(df: pl.DataFrame) -> pl.DataFrame:
    return (
        df.with_columns(tokens=pl.col("prompt_tokens") + pl.col("completion_tokens"))
        .group_by("config_name")
        .agg(
            rollouts=pl.len(),
            cost_total=pl.col("cost").sum(), cost_mean=pl.col("cost").mean(),
            tokens_total=pl.col("tokens").sum(), tokens_mean=pl.col("tokens").mean(),
            steps_mean=pl.col("steps").mean(), steps_median=pl.col("steps").median(),
            duration_mean_s=pl.col("duration_s").mean(),
        )
        .sort("config_name")
    )


def exit_statuses_by_config(df: pl.DataFrame) -> pl.DataFrame:
    counts = df.group_by("config_name", "exit_status").agg(count=pl.len())
    if counts.is_empty():
        return pl.DataFrame(schema={"config_name": pl.String})
    wide = counts.pivot(on="exit_status", index="config_name", values="count").fill_null(0)
    return wide.select("config_name", *sorted(c for c in wide.columns if c != "config_name")).sort("config_name")


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
