"""Analytics over real results.jsonl files: intervals, pass@k, paired A/B, usage, exit statuses."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from mimo_assets.helpers import stats
from mimo_assets.helpers.plots import pass_rate_png
from mimo_assets.helpers.table import frame_from_run_dirs
from mimo_core.results import ResultRecord, ResultsStore


def _write(run_dir: Path, config: str, outcomes: dict[str, list[bool | None]], **extra) -> None:
    store = ResultsStore(run_dir)
    for instance_id, results in outcomes.items():
        for k, passed in enumerate(results):
            store.put(ResultRecord(
                run_id=run_dir.name, instance_id=instance_id, config_name=config, rollout_index=k,
                exit_status="submitted" if passed is not None else "model_error", infra_error=passed is None,
                reward=None if passed is None else float(passed), passed=passed, steps=3 + k,
                prompt_tokens=100, completion_tokens=10, cost=0.01, duration_s=1.5,
                output_dir=f"{instance_id}/{config}/{k}", **extra,
            ))


def test_wilson_interval_matches_reference_values() -> None:
    lo, hi = stats.wilson_interval(5, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.2366, 0.7634)
    assert stats.wilson_interval(0, 10)[0] == 0.0 and stats.wilson_interval(10, 10)[1] == pytest.approx(1.0)
    assert stats.wilson_interval(0, 0) == (0.0, 1.0)


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    assert stats.pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert stats.pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert stats.pass_at_k(5, 4, 2) == 1.0 and stats.pass_at_k(5, 0, 3) == 0.0
    with pytest.raises(ValueError, match="pass@6"):
        stats.pass_at_k(5, 1, 6)


def test_analytics_over_two_runs_of_results(tmp_path: Path) -> None:
    a, b = tmp_path / "run-a", tmp_path / "run-b"
    _write(a, "A", {"i1": [True, False], "i2": [False, False], "i3": [True, True], "i4": [None, True]})
    _write(b, "B", {"i1": [True, True], "i2": [True, False], "i3": [False, False], "i5": [True, True]})
    df = frame_from_run_dirs([a, b])
    assert df.height == 16 and df["traj_path"][0].endswith("traj.json")

    rates = {r["config_name"]: r for r in stats.pass_rate_by_config(df).iter_rows(named=True)}
    assert (rates["A"]["rollouts"], rates["A"]["passed"]) == (7, 4)  # the infra error is left out
    assert rates["B"]["pass_rate"] == pytest.approx(5 / 8)
    assert rates["A"]["ci_low"] < rates["A"]["pass_rate"] < rates["A"]["ci_high"]

    pak = stats.pass_at_k_by_config(df)
    a2 = pak.filter((pl.col("config_name") == "B") & (pl.col("k") == 2))["pass_at_k"][0]
    assert a2 == pytest.approx((1 + 1 + 0 + 1) / 4)
    assert pak.filter(pl.col("config_name") == "A")["k"].to_list() == [1]  # i4 has one scored rollout

    ab = stats.paired_comparison(df, "A", "B")
    assert ab["shared_instances"] == 3  # i1, i2, i3: i4 and i5 ran under one config only
    assert ab["difference"] == pytest.approx(((1 - 0.5) + (0.5 - 0) + (0 - 1)) / 3)
    assert ab["ci_low"] < ab["difference"] < ab["ci_high"]
    assert ab["flipped_to_pass"] == ["i2"] and ab["flipped_to_fail"] == ["i3"]

    usage = stats.usage_by_config(df).filter(pl.col("config_name") == "A").row(0, named=True)
    assert usage["tokens_total"] == 8 * 110 and usage["cost_total"] == pytest.approx(0.08)
    exits = stats.exit_statuses_by_config(df).filter(pl.col("config_name") == "A").row(0, named=True)
    assert exits == {"config_name": "A", "model_error": 1, "submitted": 7}

    md = stats.to_markdown(stats.pass_rate_by_config(df))
    assert md.splitlines()[0].startswith("| config_name |") and "| A |" in md
    assert pass_rate_png(stats.pass_rate_by_config(df)).startswith(b"\x89PNG")
