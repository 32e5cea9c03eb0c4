"""Analytics on the results table: pass rates with intervals, pass@k, A/B, usage, exit statuses.

Each asset takes the results table as its input (loaded by the tables IO manager), publishes its table
as markdown metadata (rendered in the UI) and writes it beside the results table; the pass-rate plot is
embedded in the metadata and saved as a PNG.
"""


import json

import polars as pl
from dagster import MaterializeResult, MetadataValue, asset

from mimo_assets.asset_keys import (
    AB_COMPARISON,
    ANALYTICS_GROUP,
    EXIT_STATUSES,
    PASS_AT_K,
    PASS_RATE_TREND,
    PASS_RATES,
    RESULTS_TABLE,
    USAGE_BY_CONFIG,
)
from mimo_assets.assets.results import NIGHTS_DIR
from mimo_assets.helpers import ab, stats
from mimo_assets.helpers.events import CODE_VERSION
from mimo_assets.helpers.plots import pass_rate_png, trend_inline_md, trend_png, write_png
from mimo_assets.helpers.table import SCHEMA
from resources import OutputStore


def _publish(store: OutputStore, name: str, df: pl.DataFrame, **extra: object) -> MaterializeResult:
    path = store.tables_dir() / f"{name}.parquet"
    df.write_parquet(path)
    return MaterializeResult(metadata={"table": MetadataValue.md(stats.to_markdown(df)),
                                       "path": MetadataValue.path(str(path)), "rows": df.height, **extra})


@asset(key=PASS_RATES, group_name=ANALYTICS_GROUP, code_version=CODE_VERSION, kinds={"polars"})
def pass_rates(results_table: pl.DataFrame, output_store: OutputStore) -> MaterializeResult:
    """Pass rate per config with a 95% Wilson interval, and the plot."""
    df = stats.pass_rate_by_config(results_table)
    png = output_store.tables_dir() / "pass_rate_by_config.png"
    md = write_png(pass_rate_png(df), png) if df.height else "_no graded rollouts yet_"
    return _publish(output_store, "pass_rates", df, plot=MetadataValue.md(md), plot_path=MetadataValue.path(str(png)))


@asset(key=PASS_AT_K, group_name=ANALYTICS_GROUP, code_version=CODE_VERSION, kinds={"polars"})
def pass_at_k(results_table: pl.DataFrame, output_store: OutputStore) -> MaterializeResult:
    """Unbiased pass@k per config for k up to the rollouts every instance has."""
    return _publish(output_store, "pass_at_k", stats.pass_at_k_by_config(results_table))


@asset(key=AB_COMPARISON, group_name=ANALYTICS_GROUP, code_version=CODE_VERSION, kinds={"polars"})
def ab_comparison(results_table: pl.DataFrame, output_store: OutputStore) -> MaterializeResult:
    """Every pair of configs, B − A with a 95% interval right for the design: paired (every config on
    every instance) with the flipped instances, or unpaired (random assignment) with Newcombe's interval."""
    pairs = ab.all_pairs(results_table)
    return _publish(output_store, "ab_comparison", ab.pairs_frame(pairs),
                    pairs=MetadataValue.json(json.loads(json.dumps(pairs))))


@asset(
    code_version=CODE_VERSION, key=USAGE_BY_CONFIG, group_name=ANALYTICS_GROUP, kinds={"polars"})
def usage_by_config(results_table: pl.DataFrame, output_store: OutputStore) -> MaterializeResult:
    """Cost, tokens, steps and duration per config."""
    return _publish(output_store, "usage_by_config", stats.usage_by_config(results_table))


@asset(key=EXIT_STATUSES, group_name=ANALYTICS_GROUP, code_version=CODE_VERSION, kinds={"polars"})
def exit_statuses(results_table: pl.DataFrame, output_store: OutputStore) -> MaterializeResult:
    """How rollouts ended, per config."""
    return _publish(output_store, "exit_statuses", stats.exit_statuses_by_config(results_table))


@asset(
    code_version=CODE_VERSION, key=PASS_RATE_TREND, group_name=ANALYTICS_GROUP, deps=[RESULTS_TABLE], kinds={"polars"})
def pass_rate_trend(output_store: OutputStore) -> MaterializeResult:
    """Pass rate per config per night (every night's table), as a table and a plot: `trend` is shown on
    the asset's page as it is (a small SVG of the latest nights), `plot` is the full PNG. The latest
    night's rate of each config is also numeric metadata, which the Plots tab charts across refreshes."""
    folder = output_store.tables_dir() / NIGHTS_DIR
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    frames = [pl.read_parquet(f) for f in files]
    df = pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame(schema=SCHEMA)
    trend = stats.pass_rate_by_night(df)
    png = output_store.tables_dir() / "pass_rate_trend.png"
    md = write_png(trend_png(trend), png) if trend.height else "_no graded rollouts yet_"
    latest = trend.filter(pl.col("night") == trend["night"].max()) if trend.height else trend
    numbers = {f"pass_rate/{r['config_name']}": float(r["pass_rate"]) for r in latest.iter_rows(named=True)}
    inline = trend_inline_md(trend) if trend.height else "_no graded rollouts yet_"
    return _publish(output_store, "pass_rate_trend", trend, trend=MetadataValue.md(inline), plot=MetadataValue.md(md),
                    plot_path=MetadataValue.path(str(png)), nights=trend["night"].n_unique(), **numbers)
