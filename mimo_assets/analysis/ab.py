"""A/B comparisons of two configs, B minus A, with 95 % intervals that are right for the design.

- Random assignment (several `-c`: one config per instance) gives two independent samples: the
  difference of pass rates with Newcombe's hybrid score interval (Newcombe 1998, method 10), built from
  each rate's Wilson interval, so it stays inside [-1, 1] and is never zero-width.
- Every config on every instance (`paired`) gives matched pairs: the mean per-instance difference, the
  instances that flipped, and Newcombe's interval for paired proportions (Newcombe 1998b, method 10)
  when each instance has one outcome per config; with several rollouts per instance (fractional
  rates), a normal interval over the per-instance differences.
- No data on a side: no difference and no interval, never "0.0 [0, 0]".

A comparison belongs to the run that designed it (analysis/designs.py): `designed` compares exactly that
run's cells with the statistic of its design, per kind of run. `across_runs` compares two configs over
whatever the results table holds for them, per dataset and kind: only when asked, and labelled so.
Infra-error rollouts never count (see stats.scored).
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from mimo_assets.analysis.designs import Design
from mimo_assets.analysis.stats import Z95, scored, wilson_interval

SCHEMA: dict[str, Any] = {
    "dataset": pl.String,
    "run_kind": pl.String,
    "design": pl.String,
    "seed": pl.Int64,
    "a": pl.String,
    "b": pl.String,
    "method": pl.String,
    "n_a": pl.Int64,
    "n_b": pl.Int64,
    "shared_instances": pl.Int64,
    "pass_rate_a": pl.Float64,
    "pass_rate_b": pl.Float64,
    "difference": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "flipped_to_pass": pl.String,
    "flipped_to_fail": pl.String,
    "runs": pl.String,
}
ACROSS_RUNS = "across runs"  # the label of a comparison made across runs, on request


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
    cross: float = both * neither - b_only * a_only
    if cross > 0:  # Newcombe's continuity correction of the correlation
        cross = max(cross - n / 2, 0.0)
    phi = cross / math.sqrt(denom) if denom else 0.0
    d = p_b - p_a
    delta = math.sqrt(max(0.0, (p_b - l_b) ** 2 - 2 * phi * (p_b - l_b) * (u_a - p_a) + (u_a - p_a) ** 2))
    eps = math.sqrt(max(0.0, (u_b - p_b) ** 2 - 2 * phi * (u_b - p_b) * (p_a - l_a) + (p_a - l_a) ** 2))
    return d, max(-1.0, d - delta), min(1.0, d + eps)


def _rates(df: pl.DataFrame, a: str, b: str) -> pl.DataFrame:
    """One row per instance both configs ran: its pass rate under A and under B. An instance is a dataset's
    (two datasets that share an id are two instances); with several datasets its id says which."""
    s = scored(df)
    if s["dataset"].n_unique() > 1:
        s = s.with_columns(instance_id=pl.col("dataset") + "/" + pl.col("instance_id"))
    rates = (
        s.filter(pl.col("config_name").is_in([a, b]))
        .group_by("instance_id", "config_name")
        .agg(rate=pl.col("ok").mean())
    )
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
    out: dict[str, Any] = {
        "a": a,
        "b": b,
        "design": "paired",
        "n_a": n,
        "n_b": n,
        "shared_instances": n,
        "pass_rate_a": sum(ra) / n if n else None,
        "pass_rate_b": sum(rb) / n if n else None,
        "difference": None,
        "ci_low": None,
        "ci_high": None,
        "method": None,
        "flipped_to_pass": gained,
        "flipped_to_fail": lost,
    }
    if n == 0:
        return out
    if all(r in (0.0, 1.0) for r in ra + rb):
        cells = [
            sum(1 for x, y in zip(ra, rb, strict=True) if (x, y) == pair)
            for pair in ((1.0, 1.0), (0.0, 1.0), (1.0, 0.0), (0.0, 0.0))
        ]
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
    counts = {
        c: (int(g["ok"].sum()), g.height)
        for (c,), g in s.filter(pl.col("config_name").is_in([a, b])).group_by("config_name")
    }
    (x_a, n_a), (x_b, n_b) = counts.get(a, (0, 0)), counts.get(b, (0, 0))
    result = newcombe_unpaired(x_a, n_a, x_b, n_b)
    return {
        "a": a,
        "b": b,
        "design": "unpaired",
        "method": "newcombe" if result else None,
        "n_a": n_a,
        "n_b": n_b,
        "shared_instances": 0,
        "pass_rate_a": x_a / n_a if n_a else None,
        "pass_rate_b": x_b / n_b if n_b else None,
        "difference": result[0] if result else None,
        "ci_low": result[1] if result else None,
        "ci_high": result[2] if result else None,
        "flipped_to_pass": [],
        "flipped_to_fail": [],
    }


def compare(df: pl.DataFrame, a: str, b: str) -> dict[str, Any]:
    """Paired over the instances both ran when there are any, else two independent samples."""
    paired = paired_comparison(df, a, b)
    return paired if paired["shared_instances"] else unpaired_comparison(df, a, b)


def _pairs(configs: list[str]) -> list[tuple[str, str]]:
    names = sorted(set(configs))
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]


def designed(design: Design, cells: pl.DataFrame) -> list[dict[str, Any]]:
    """Each pair of a design's configs, B − A by name, on exactly its run's cells (`cells`: their records),
    per kind of run, with the design's own statistic: paired, or unpaired for a random assignment."""
    out = []
    frame = scored(cells)
    for (kind,), group in sorted(frame.group_by("run_kind"), key=lambda g: str(g[0][0])):
        for a, b in _pairs(design.configs):
            result = paired_comparison(group, a, b) if design.design == "paired" else unpaired_comparison(group, a, b)
            result.update(
                dataset=design.dataset,
                run_kind=kind,
                design=design.design,
                seed=design.seed if design.design == "random" else None,
                runs=design.run_ids,
            )
            out.append(result)
    return out


def across_runs(df: pl.DataFrame, asked: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The asked pairs over the results table (each cell's current result, whichever run gave it), per
    dataset and kind: paired over the instances both have, else unpaired; labelled as across runs."""
    out = []
    frame = scored(df)
    for (dataset, kind), group in sorted(frame.group_by("dataset", "run_kind"), key=lambda g: tuple(map(str, g[0]))):
        for a, b in (tuple(sorted(p)) for p in asked):
            result = compare(group, a, b)
            if not result["n_a"] or not result["n_b"]:  # one side never ran here: nothing to compare
                continue
            runs = sorted(group.filter(pl.col("config_name").is_in([a, b]))["run_id"].unique().to_list())
            result.update(
                dataset=dataset, run_kind=kind, design=f"{ACROSS_RUNS}: {result['design']}", seed=None, runs=runs
            )
            out.append(result)
    return out


def pairs_frame(pairs: list[dict[str, Any]]) -> pl.DataFrame:
    rows = [{k: (", ".join(map(str, v)) or "-" if isinstance(v, list) else v) for k, v in p.items()} for p in pairs]
    return pl.DataFrame(rows, schema=SCHEMA, orient="row") if rows else pl.DataFrame(schema=SCHEMA)
