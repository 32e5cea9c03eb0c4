"""Analytics over real results.jsonl files: intervals, pass@k, paired A/B, usage, exit statuses."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from mimo_assets.analysis import ab, stats
from mimo_assets.analysis.plots import pass_rate_png
from mimo_assets.analysis.table import frame_from_run_dirs
from mimo_core.records.results import ResultRecord, ResultsStore
from mimo_core.status import ExitStatus


def _write(run_dir: Path, config: str, outcomes: dict[str, list[bool | None]], **extra) -> None:
    store = ResultsStore(run_dir)
    for instance_id, results in outcomes.items():
        for k, passed in enumerate(results):
            store.put(
                ResultRecord(
                    run_id=run_dir.name,
                    instance_id=instance_id,
                    config_name=config,
                    rollout_index=k,
                    exit_status=ExitStatus.SUBMITTED if passed is not None else ExitStatus.MODEL_ERROR,
                    reward=None if passed is None else float(passed),
                    passed=passed,
                    steps=3 + k,
                    prompt_tokens=100,
                    completion_tokens=10,
                    cost=0.01,
                    duration_s=1.5,
                    output_dir=f"{instance_id}/{config}/{k}",
                    **extra,
                )
            )


def test_wilson_interval_matches_reference_values() -> None:
    lo, hi = stats.wilson_interval(5, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.2366, 0.7634)
    assert stats.wilson_interval(0, 10)[0] == 0.0 and stats.wilson_interval(10, 10)[1] == 1.0
    assert stats.wilson_interval(0, 0) == (0.0, 1.0)


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    assert stats.pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert stats.pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert stats.pass_at_k(5, 4, 2) == 1.0 and stats.pass_at_k(5, 0, 3) == 0.0
    with pytest.raises(ValueError, match="pass@6"):
        stats.pass_at_k(5, 1, 6)


@pytest.fixture
def two_runs(tmp_path: Path) -> pl.DataFrame:
    """Config A in one run folder, B in another; i1-i3 ran under both, i4 only under A (one rollout an
    infra error), i5 only under B."""
    a, b = tmp_path / "run-a", tmp_path / "run-b"
    _write(a, "A", {"i1": [True, False], "i2": [False, False], "i3": [True, True], "i4": [None, True]})
    _write(b, "B", {"i1": [True, True], "i2": [True, False], "i3": [False, False], "i5": [True, True]})
    return frame_from_run_dirs([a, b])


def test_results_frame_has_every_record_of_every_run_folder(two_runs: pl.DataFrame) -> None:
    assert two_runs.height == 16 and two_runs["traj_path"][0].endswith("traj.json")


def test_pass_rate_per_config_leaves_infra_errors_out(two_runs: pl.DataFrame) -> None:
    rates = {r["config_name"]: r for r in stats.pass_rates(two_runs).iter_rows(named=True)}
    assert (rates["A"]["attempted"], rates["A"]["errors"], rates["A"]["graded"], rates["A"]["passed"]) == (8, 1, 7, 4)
    assert rates["A"]["pass_rate_of_attempted"] == pytest.approx(4 / 8)  # the infra error counts as a failure
    assert rates["B"]["pass_rate_of_graded"] == pytest.approx(5 / 8)
    assert rates["A"]["ci_low"] < rates["A"]["pass_rate_of_graded"] < rates["A"]["ci_high"]


def test_pass_at_k_per_config_goes_up_to_the_rollouts_every_instance_has(two_runs: pl.DataFrame) -> None:
    pak = stats.pass_at_k_table(two_runs)
    b2 = pak.filter((pl.col("config_name") == "B") & (pl.col("k") == 2))["pass_at_k"][0]
    assert b2 == pytest.approx((1 + 1 + 0 + 1) / 4)
    assert pak.filter(pl.col("config_name") == "A")["k"].to_list() == [1]  # i4 has one scored rollout


def test_paired_comparison_uses_shared_instances_and_names_flips(two_runs: pl.DataFrame) -> None:
    pair = ab.compare(two_runs, "A", "B")
    assert pair["design"] == "paired" and pair["method"] == "normal-paired"  # 2 rollouts: fractional rates
    assert pair["shared_instances"] == 3  # i1, i2, i3: i4 and i5 ran under one config only
    assert pair["difference"] == pytest.approx(((1 - 0.5) + (0.5 - 0) + (0 - 1)) / 3)
    assert pair["ci_low"] < pair["difference"] < pair["ci_high"]
    assert pair["flipped_to_pass"] == ["i2"] and pair["flipped_to_fail"] == ["i3"]


def test_usage_and_exit_statuses_per_config(two_runs: pl.DataFrame) -> None:
    usage = stats.usage(two_runs).filter(pl.col("config_name") == "A").row(0, named=True)
    assert usage["tokens_total"] == 8 * 110 and usage["cost_total"] == pytest.approx(0.08)
    exits = stats.exit_statuses(two_runs).filter(pl.col("config_name") == "A").row(0, named=True)
    assert exits == {"dataset": "-", "run_kind": "rollout", "config_name": "A", "model_error": 1, "submitted": 7}


def test_pass_rates_render_as_markdown_and_a_png(two_runs: pl.DataFrame) -> None:
    md = stats.to_markdown(stats.pass_rates(two_runs))
    assert md.splitlines()[0].startswith("| dataset | run_kind | config_name |") and "| - | rollout | A |" in md
    assert pass_rate_png(stats.pass_rates(two_runs)).startswith(b"\x89PNG")


def test_newcombe_unpaired_interval_matches_newcombe_1998() -> None:
    """Newcombe (1998) Table II example: 56/70 vs 48/80, difference 0.2, 95% CI 0.0524 to 0.3339."""
    d, lo, hi = ab.newcombe_unpaired(48, 80, 56, 70)
    assert (round(d, 4), round(lo, 4), round(hi, 4)) == (0.2, 0.0524, 0.3339)
    assert ab.newcombe_unpaired(0, 0, 3, 5) is None


def test_paired_interval_is_narrower_than_unpaired_when_outcomes_agree_and_never_zero_width() -> None:
    d, lo, hi = ab.newcombe_paired(both=12, b_only=9, a_only=2, neither=4)
    assert d == pytest.approx(7 / 27) and 0 < lo < d < hi < 1
    _, ulo, uhi = ab.newcombe_unpaired(14, 27, 21, 27)
    assert hi - lo < uhi - ulo  # the pairing's positive correlation is information
    d, lo, hi = ab.newcombe_paired(both=5, b_only=0, a_only=0, neither=5)  # identical outcomes
    assert d == 0 and lo < 0 < hi
    assert ab.newcombe_paired(0, 0, 0, 0) is None


def test_random_assignment_gives_an_unpaired_figure_not_zero_over_zero_shared(tmp_path: Path) -> None:
    """Several -c assign one config per instance: no shared instance, so the comparison is unpaired."""
    a, b = tmp_path / "run-a", tmp_path / "run-b"
    _write(a, "A", {f"a{i}": [i < 3] for i in range(10)})  # 3/10
    _write(b, "B", {f"b{i}": [i < 8] for i in range(10)})  # 8/10
    pair = ab.compare(frame_from_run_dirs([a, b]), "A", "B")
    assert pair["design"] == "unpaired" and pair["method"] == "newcombe" and pair["shared_instances"] == 0
    assert (pair["n_a"], pair["n_b"]) == (10, 10) and pair["difference"] == pytest.approx(0.5)
    assert 0 < pair["ci_low"] < 0.5 < pair["ci_high"] < 1
    empty = ab.compare(frame_from_run_dirs([a]), "A", "B")
    assert empty["difference"] is None and empty["ci_low"] is None and empty["ci_high"] is None


def test_every_config_on_every_instance_gives_the_paired_figure_and_flips(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write(run, "A", {f"i{i:02d}": [i < 8] for i in range(20)})  # passes i00..i07
    _write(run, "B", {f"i{i:02d}": [i < 16] for i in range(20)})  # passes i00..i15: 8 flips, none back
    pair = ab.compare(frame_from_run_dirs([run]), "A", "B")
    assert pair["design"] == "paired" and pair["method"] == "newcombe-paired" and pair["shared_instances"] == 20
    assert pair["difference"] == pytest.approx(0.4) and 0 < pair["ci_low"] < 0.4 < pair["ci_high"] < 1
    assert pair["flipped_to_pass"] == [f"i{i:02d}" for i in range(8, 16)] and pair["flipped_to_fail"] == []
    table = ab.pairs_frame([pair])
    assert table.row(0, named=True)["flipped_to_pass"].startswith("i08, i09")


def test_an_id_two_datasets_share_is_two_instances_in_the_comparison(tmp_path: Path) -> None:
    """A under dataset x, B under dataset y, both with ids i0..i3: nothing is shared, so unpaired."""
    a, b = tmp_path / "run-a", tmp_path / "run-b"
    _write(a, "A", {f"i{i}": [i < 1] for i in range(4)})
    _write(b, "B", {f"i{i}": [i < 3] for i in range(4)})
    df = frame_from_run_dirs([a, b]).with_columns(
        dataset=pl.when(pl.col("config_name") == "A").then(pl.lit("x")).otherwise(pl.lit("y"))
    )
    pair = ab.compare(df, "A", "B")
    assert pair["design"] == "unpaired" and pair["shared_instances"] == 0 and (pair["n_a"], pair["n_b"]) == (4, 4)
    assert ab.compare(df.with_columns(dataset=pl.lit("x")), "A", "B")["design"] == "paired"  # one dataset: shared


N_MAX = 5000
BLOCK = 500


def test_wilson_interval_agrees_with_statsmodels_stays_in_0_1_and_holds_the_rate_for_every_n() -> None:
    """n = 1..5000, all-pass, all-fail and a middle count: the reference interval (statsmodels' Wilson),
    except that ours is clamped into [0, 1] and never leaves the observed rate outside (the formula's bound
    is 0.9999999999999999 for 1008/1008, which made the plot's error bar negative)."""
    from statsmodels.stats.proportion import proportion_confint

    for n in range(1, N_MAX + 1):
        for passed in (0, n // 3, n):
            lo, hi = stats.wilson_interval(passed, n)
            ref_lo, ref_hi = proportion_confint(passed, n, alpha=0.05, method="wilson")
            p = passed / n
            assert 0.0 <= lo <= p <= hi <= 1.0, (passed, n, lo, hi)
            assert lo == pytest.approx(max(0.0, ref_lo), abs=1e-12) and hi == pytest.approx(min(1.0, ref_hi), abs=1e-12)
        assert stats.wilson_interval(n, n)[1] == 1.0 and stats.wilson_interval(0, n)[0] == 0.0


def _rates_table(ns: range, passed_all: bool) -> pl.DataFrame:
    """What stats.pass_rates gives for one config per n: n rollouts, all passing or all failing."""
    rows = []
    for n in ns:
        passed = n if passed_all else 0
        lo, hi = stats.wilson_interval(passed, n)
        rows.append(
            {
                "dataset": "d",
                "run_kind": "rollout",
                "config_name": f"c{n:05d}",
                "attempted": n,
                "errors": 0,
                "graded": n,
                "instances": n,
                "passed": passed,
                "pass_rate_of_graded": passed / n,
                "ci_low": lo,
                "ci_high": hi,
                "night": f"n{n:05d}",
            }
        )
    return pl.DataFrame(rows)


@pytest.mark.parametrize("passed_all", [True, False], ids=["all-pass", "all-fail"])
@pytest.mark.parametrize("first", range(1, N_MAX + 1, BLOCK), ids=lambda f: f"n={f}..{f + BLOCK - 1}")
def test_the_plots_draw_for_every_n_when_everything_passes_or_fails(first: int, passed_all: bool) -> None:
    """Every n of the block as a bar (pass rates) and as a night of one line (the trend)."""
    from mimo_assets.analysis.plots import error_bars, trend_png

    table = _rates_table(range(first, first + BLOCK), passed_all)
    below, above = error_bars(
        table["pass_rate_of_graded"].to_list(), table["ci_low"].to_list(), table["ci_high"].to_list()
    )
    assert min(below) >= 0 and min(above) >= 0
    assert pass_rate_png(table.drop("night")).startswith(b"\x89PNG")
    assert trend_png(table.with_columns(config_name=pl.lit("c"))).startswith(b"\x89PNG")


def test_newcombe_unpaired_agrees_with_statsmodels_over_a_grid() -> None:
    from statsmodels.stats.proportion import confint_proportions_2indep

    for n_a, n_b in ((1, 1), (5, 9), (20, 20), (37, 12), (200, 150)):
        for x_a in sorted({0, n_a // 2, n_a}):
            for x_b in sorted({0, n_b // 3, n_b}):
                d, lo, hi = ab.newcombe_unpaired(x_a, n_a, x_b, n_b)
                ref_lo, ref_hi = confint_proportions_2indep(x_b, n_b, x_a, n_a, method="newcomb", compare="diff")
                assert d == pytest.approx(x_b / n_b - x_a / n_a)
                assert lo == pytest.approx(ref_lo, abs=1e-9) and hi == pytest.approx(ref_hi, abs=1e-9), (x_a, x_b)
                assert -1 <= lo <= d <= hi <= 1
