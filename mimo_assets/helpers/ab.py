"""A/B comparisons of two configs, B minus A, with 95 % intervals that are right for the design.

- Random assignment (several `-c`: one config per instance) gives two independent samples: the
  difference of pass rates with Newcombe's hybrid score interval (Newcombe 1998, method 10), built from
  each rate's Wilson interval, so it stays inside [-1, 1] and is never zero-width.
- Every config on every instance (`paired`) gives matched pairs: the mean per-instance difference, the
  instances that flipped, and Newcombe's interval for paired proportions (Newcombe 1998b, method 10)
  when each instance has one outcome per config; with several rollouts per instance (fractional
  rates), a normal interval over the per-instance differences.
- No data on a side: no difference and no interval, never "0.0 [0, 0]".

Infra-error rollouts never count (see stats.scored).
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from mimo_assets.helpers.stats import Z95, scored, wilson_interval

SCHEMA: dict[str, Any] = {
    "a": pl.String, "b": pl.String, "design": pl.String, "method": pl.String, "n_a": pl.Int64, "n_b": pl.Int64,
    "shared_instances": pl.Int64, "pass_rate_a": pl.Float64, "pass_rate_b": pl.Float64,
    "difference": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
    "flipped_to_pass": pl.String, "flipped_to_fail": pl.String,
}


def newcombe_unpaired(x_a: int, n_a: int, x_b: int, n_b: int) -> tuple[float, float, float] | None:
    """(p_b - p_a, low, high) for independent samples; None when either side has no rollouts."""
    if n_a == 0 or n_b == 0:
        return None
    p_a, p_b = x_a / n_a, x_b / n_b
    l_a, u_a = wilson_interval(x_a, n_a)
    l_b, u_b = wilson_interval(x_b, n_b)
    d = p_b - p_a
    return d, d - math.sqrt((p_b - l_b) ** 2 + (u_a - p_a) ** 2), d + math.sqrt((u_b - p_b) ** 2 + (p_a - l_a) ** 2)


def newcombe_paired(both: int, b_only: int, a_only: int, neither: int) -> tuple[float, float, float] | None:
    """(p_b - p_a, low, high) for matched binary pairs; None without pairs."""
    n = both + b_only + a_only + neither
    if n == 0:
        return None
    p_b, p_a = (both + b_only) / n, (both + a_only) / n
    l_b, u_b = wilson_interval(both + b_only, n)
    l_a, u_a = wilson_interval(both + a_only, n)
    denom = (both + b_only) * (a_only + neither) * (both + a_only) * (b_only + neither)
    cross = both * neither - b_only * a_only
    if cross > 0:  # Newcombe's continuity correction of the correlation
        cross = max(cross - n / 2, 0.0)
    phi = cross / math.sqrt(denom) if denom else 0.0
    d = p_b - p_a
    delta = math.sqrt(max(0.0, (p_b - l_b) ** 2 - 2 * phi * (p_b - l_b) * (u_a - p_a) + (u_a - p_a) ** 2))
    eps = math.sqrt(max(0.0, (u_b - p_b) ** 2 - 2 * phi * (u_b - p_b) * (p_a - l_a) + (p_a - l_a) ** 2))
    return d, max(-1.0, d - delta), min(1.0, d + eps)


def _rates(df: pl.DataFrame, a: str, b: str) -> pl.DataFrame:
    """One row per instance both configs ran: its pass rate under A and under B."""
    rates = scored(df).filter(pl.col("config_name").is_in([a, b])).group_by("instance_id", "config_name").agg(
        rate=pl.col("ok").mean())
    wide = rates.pivot(on="config_name", index="instance_id", values="rate") if rates.height else rates
    if a not in wide.columns or b not in wide.columns:
        return pl.DataFrame(schema={"instance_id": pl.String, a: pl.Float64, b: pl.Float64})
    return wide.drop_nulls([a, b]).sort("instance_id")


def paired_comparison(df: pl.DataFrame, a: str, b: str) -> dict[str, Any]:
    wide = _rates(df, a, b)
    n = wide.height
    ra, rb = wide[a].to_list(), wide[b].to_list()
    gained = wide.filter((pl.col(a) < 0.5) & (pl.col(b) >= 0.5))["instance_id"].to_list()
    lost = wide.filter((pl.col(a) >= 0.5) & (pl.col(b) < 0.5))["instance_id"].to_list()
    out: dict[str, Any] = {"a": a, "b": b, "design": "paired", "n_a": n, "n_b": n, "shared_instances": n,
                           "pass_rate_a": sum(ra) / n if n else None, "pass_rate_b": sum(rb) / n if n else None,
                           "difference": None, "ci_low": None, "ci_high": None, "method": None,
                           "flipped_to_pass": gained, "flipped_to_fail": lost}
    if n == 0:
        return out
    if all(r in (0.0, 1.0) for r in ra + rb):
        cells = [sum(1 for x, y in zip(ra, rb, strict=True) if (x, y) == pair)
                 for pair in ((1.0, 1.0), (0.0, 1.0), (1.0, 0.0), (0.0, 0.0))]
        result = newcombe_paired(*cells)
        assert result is not None
        out.update(method="newcombe-paired", difference=result[0], ci_low=result[1], ci_high=result[2])
        return out
    diffs = [y - x for x, y in zip(ra, rb, strict=True)]
    mean = sum(diffs) / n
    out.update(method="normal-paired", difference=mean)
    if n > 1:
        half = Z95 * math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1)) / math.sqrt(n)
        out.update(ci_low=max(-1.0, mean - half), ci_high=min(1.0, mean + half))
    return out


def unpaired_comparison(df: pl.DataFrame, a: str, b: str) -> dict[str, Any]:
    s = scored(df)
    counts = {c: (int(g["ok"].sum()), g.height) for (c,), g in s.filter(pl.col("config_name").is_in([a, b]))
              .group_by("config_name")}
    (x_a, n_a), (x_b, n_b) = counts.get(a, (0, 0)), counts.get(b, (0, 0))
    result = newcombe_unpaired(x_a, n_a, x_b, n_b)
    return {"a": a, "b": b, "design": "unpaired", "method": "newcombe" if result else None, "n_a": n_a, "n_b": n_b,
            "shared_instances": 0, "pass_rate_a": x_a / n_a if n_a else None,
            "pass_rate_b": x_b / n_b if n_b else None, "difference": result[0] if result else None,
            "ci_low": result[1] if result else None, "ci_high": result[2] if result else None,
            "flipped_to_pass": [], "flipped_to_fail": []}


def compare(df: pl.DataFrame, a: str, b: str) -> dict[str, Any]:
    """Paired over the instances both ran when there are any, else two independent samples."""
    paired = paired_comparison(df, a, b)
    return paired if paired["shared_instances"] else unpaired_comparison(df, a, b)


def all_pairs(df: pl.DataFrame) -> list[dict[str, Any]]:
    configs = sorted(df["config_name"].unique().to_list())
    return [compare(df, a, b) for i, a in enumerate(configs) for b in configs[i + 1:]]


def pairs_frame(pairs: list[dict[str, Any]]) -> pl.DataFrame:
    rows = [{k: (", ".join(v) or "-" if isinstance(v, list) else v) for k, v in p.items()} for p in pairs]
    return pl.DataFrame(rows, schema=SCHEMA, orient="row") if rows else pl.DataFrame(schema=SCHEMA)
