"""Analytics on the results table: pass rates with intervals, pass@k, A/B, usage, exit statuses.

Each asset takes the results table as its input (loaded by the tables IO manager), publishes its table
as markdown metadata (rendered in the UI) and writes it beside the results table; the pass-rate plot is
embedded in the metadata and saved as a PNG. Every table is keyed by dataset, kind of run and config
(analysis/stats.py); each asset's metadata names the runs (`runs`) and the number of rollouts
(`rollouts`) it was computed from.
"""

import json
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
from dagster import AssetExecutionContext, Config, MaterializeResult, MetadataValue, asset
from pydantic import Field

from mimo_assets.analysis import ab, stats
from mimo_assets.analysis.cache import RefreshCache
from mimo_assets.analysis.designs import design_cells, designs
from mimo_assets.analysis.plots import pass_rate_png, trend_inline_md, trend_png, write_png
from mimo_assets.analysis.table import SCHEMA, FolderReader, frame, read_folder
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
from mimo_assets.eventlog.events import CODE_VERSION
from mimo_core.records.rates import GRADED, PASS_RATE_OF_GRADED
from resources import OutputStore

if TYPE_CHECKING:
    from mimo_assets.dagster_private import RawMetadataValue


def _computed_from(df: pl.DataFrame) -> "dict[str, RawMetadataValue]":
    """What an analytics asset was computed from: the runs and the number of rollouts."""
    runs = sorted(r for r in df["run_id"].unique().to_list() if r) if "run_id" in df.columns else []
    return {"runs": MetadataValue.json(runs), "rollouts": df.height}


def _publish(
    store: OutputStore,
    name: str,
    df: pl.DataFrame,
    source: pl.DataFrame,
    **extra: "RawMetadataValue",
) -> MaterializeResult:
    path = store.tables_dir() / f"{name}.parquet"
    df.write_parquet(path)
    return MaterializeResult(
        metadata={
            "table": MetadataValue.md(stats.to_markdown(stats.labelled(df))),
            "path": MetadataValue.path(str(path)),
            "rows": df.height,
            **_computed_from(source),
            **extra,
        }
    )


@asset(key=PASS_RATES, group_name=ANALYTICS_GROUP, code_version=CODE_VERSION, kinds={"polars"})
def pass_rates(results_table: pl.DataFrame, output_store: OutputStore) -> MaterializeResult:
    """Per dataset, kind of run (rollout, oracle, gold recalc, regrade) and config: attempted, errors
    (infrastructure), graded, passed, the pass rate (of graded) with a 95 % Wilson interval and the pass rate
    (of attempted) (mimo_core.records.rates, the CLI table's too), and the plot of the rate of graded."""
    df = stats.pass_rates(results_table)
    png = output_store.tables_dir() / "pass_rate_by_config.png"
    drawn = df.filter(pl.col(GRADED) > 0)
    md = write_png(pass_rate_png(drawn), png) if drawn.height else "_no graded rollouts yet_"
    return _publish(
        output_store, "pass_rates", df, results_table, plot=MetadataValue.md(md), plot_path=MetadataValue.path(str(png))
    )


@asset(key=PASS_AT_K, group_name=ANALYTICS_GROUP, code_version=CODE_VERSION, kinds={"polars"})
def pass_at_k(results_table: pl.DataFrame, output_store: OutputStore) -> MaterializeResult:
    """Unbiased pass@k per dataset, kind of run and config, for k up to the rollouts every instance has."""
    return _publish(output_store, "pass_at_k", stats.pass_at_k_table(results_table), stats.scored(results_table))


class AbConfig(Config):
    """Comparisons across runs are made only when asked: by default each designed A/B is compared alone."""

    across_runs: list[str] = Field(
        default_factory=list,
        description="config pairs `A,B` to compare over every "
        "run's current results too (per dataset and kind; labelled 'across runs')",
    )


@asset(key=AB_COMPARISON, group_name=ANALYTICS_GROUP, code_version=CODE_VERSION, kinds={"polars"})
def ab_comparison(
    context: AssetExecutionContext,
    config: AbConfig,
    results_table: pl.DataFrame,
    output_store: OutputStore,
) -> MaterializeResult:
    """Each A/B a run designed (a run with several configs: one per instance at random with its seed, or
    paired), B − A by config name with that design's 95 % interval, on exactly that run's cells: paired
    with the flipped instances, or unpaired (random assignment) with Newcombe's interval. Across runs
    only when asked (`across_runs`), labelled so."""
    pairs, sources = [], []
    cache = RefreshCache.of(output_store.tables_dir())  # what the results table's refresh kept: read once
    for design in designs(context.instance):
        cells = design_cells(context.instance, design, cache.events(context.instance))
        if not cells:
            continue
        frame = _cells_frame(cells, design.dataset, cache.folder)
        pairs += ab.designed(design, frame)
        sources.append(frame)
    asked = [tuple(p.split(",", 1)) for p in config.across_runs]
    bad = [p for p in asked if len(p) != 2 or not all(x.strip() for x in p)]
    if bad:
        raise ValueError(f"ab_comparison: across_runs entries must be `A,B` (two config names), got {bad}")
    if asked:
        pairs += ab.across_runs(results_table, [(a.strip(), b.strip()) for a, b in asked])
        sources.append(results_table)
    source = pl.concat([stats.scored(f) for f in sources], how="vertical_relaxed") if sources else results_table
    return _publish(
        output_store,
        "ab_comparison",
        ab.pairs_frame(pairs),
        source,
        pairs=MetadataValue.json(json.loads(json.dumps(pairs))),
    )


def _cells_frame(cells: dict[tuple[str, str], Path], dataset: str, folder: FolderReader = read_folder) -> pl.DataFrame:
    """The graded records of a design's cells, each from the folder its graded materialization names (the
    folder's rows joined to its cells at once: one pass, not one per cell), in the cells' order."""
    by_dir: dict[Path, list[tuple[int, str, str]]] = {}
    for n, ((instance_id, config_name), run_dir) in enumerate(cells.items()):
        by_dir.setdefault(run_dir, []).append((n, instance_id, config_name))
    tables = []
    schema = {"_order": pl.Int64, "instance_id": pl.String, "config_name": pl.String}
    for run_dir, part in by_dir.items():
        wanted = pl.DataFrame(part, schema=schema, orient="row")
        rows = folder(run_dir).filter(~pl.col("infra_error")).join(wanted, on=["instance_id", "config_name"])
        rows = rows.sort("_order", "rollout_index", maintain_order=True).with_columns(dataset=pl.lit(dataset))
        tables.append(rows.select(list(SCHEMA)))
    return pl.concat(tables, how="vertical") if tables else frame([])


@asset(code_version=CODE_VERSION, key=USAGE_BY_CONFIG, group_name=ANALYTICS_GROUP, kinds={"polars"})
def usage_by_config(results_table: pl.DataFrame, output_store: OutputStore) -> MaterializeResult:
    """Cost, tokens, steps and duration per dataset, kind of run and config."""
    return _publish(output_store, "usage_by_config", stats.usage(results_table), results_table)


@asset(key=EXIT_STATUSES, group_name=ANALYTICS_GROUP, code_version=CODE_VERSION, kinds={"polars"})
def exit_statuses(results_table: pl.DataFrame, output_store: OutputStore) -> MaterializeResult:
    """How rollouts ended, per dataset, kind of run and config."""
    return _publish(output_store, "exit_statuses", stats.exit_statuses(results_table), results_table)


@asset(
    code_version=CODE_VERSION, key=PASS_RATE_TREND, group_name=ANALYTICS_GROUP, deps=[RESULTS_TABLE], kinds={"polars"}
)
def pass_rate_trend(output_store: OutputStore) -> MaterializeResult:
    """Pass rate per night, dataset, kind of run and config (every night's table), as a table and a plot:
    `trend` is shown on the asset's page as it is (a small SVG of the latest nights), `plot` is the full
    PNG. The latest night's rate of each is also numeric metadata (`pass_rate_of_graded/<dataset>/<kind>/<config>`),
    which the Plots tab charts across refreshes."""
    folder = output_store.tables_dir() / NIGHTS_DIR
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    frames = [pl.read_parquet(f) for f in files]
    df = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame(schema=SCHEMA)
    trend = stats.pass_rate_by_night(df).filter(pl.col(GRADED) > 0)
    png = output_store.tables_dir() / "pass_rate_trend.png"
    md = write_png(trend_png(trend), png) if trend.height else "_no graded rollouts yet_"
    latest = trend.filter(pl.col("night") == trend["night"].max()) if trend.height else trend
    numbers = {
        f"{PASS_RATE_OF_GRADED}/{r['dataset']}/{r['run_kind']}/{r['config_name']}": float(r[PASS_RATE_OF_GRADED])
        for r in latest.iter_rows(named=True)
    }
    inline = trend_inline_md(trend) if trend.height else "_no graded rollouts yet_"
    return _publish(
        output_store,
        "pass_rate_trend",
        trend,
        df,
        trend=MetadataValue.md(inline),
        plot=MetadataValue.md(md),
        plot_path=MetadataValue.path(str(png)),
        nights=trend["night"].n_unique(),
        **numbers,
    )
