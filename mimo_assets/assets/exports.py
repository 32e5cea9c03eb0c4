"""Training exports downstream of graded results: `sft_export`, `rl_export`, `atif_export`.

Each reads the latest graded materialization of every partition (whichever door ran it: CLI, backfill,
evaluate job, schedule) and writes `<output root>/exports/<format>/` with mimo_core's exporters, the
same as `mimoagent export` (docs/exports.md). Rollouts left out (no token ids for `rl`, no messages)
are listed in `<format>_report.json` and in the materialization's metadata.
"""

from pathlib import Path

from dagster import AssetExecutionContext, AssetKey, AssetsDefinition, Config, MaterializeResult, MetadataValue, asset
from pydantic import Field

from mimo_assets.analysis.table import graded_by_night
from mimo_assets.asset_keys import ATIF_EXPORT, EXPORTS_GROUP, GRADED_RESULTS, RL_EXPORT, SFT_EXPORT
from mimo_assets.eventlog.events import CODE_VERSION
from mimo_core.exports.source import ExportFilter, RolloutRef, select_latest
from mimo_core.exports.write import EmptyExport, write_export
from resources import OutputStore

SHOW_SKIPPED = 20
EXPORT_PREFERENCE = ("gold", "regrade", "agent")  # of a cell's results in one night, the last of these wins


class ExportConfig(Config):
    """Which rollouts go into the export (unset: all of them)."""

    statuses: list[str] = Field(default_factory=list, description="keep these exit statuses (e.g. submitted)")
    min_reward: float | None = Field(default=None, description="keep rewards >= this (drops ungraded rollouts)")
    max_reward: float | None = Field(default=None, description="keep rewards <= this (drops ungraded rollouts)")
    configs: list[str] = Field(default_factory=list, description="keep these config names")


def _export(fmt: str, context: AssetExecutionContext, config: ExportConfig, store: OutputStore) -> MaterializeResult:
    latest: dict[str, dict[tuple[str, str], Path]] = {}  # dataset → (instance, config) → run folder
    for _night, parts in sorted(graded_by_night(context.instance).items()):
        # a later night wins; within a night an agent's run (it has the trajectory) over a regrade or gold recalc
        for (dataset, instance_id, config_name, _source), run_dir in sorted(
            parts.items(), key=lambda item: EXPORT_PREFERENCE.index(item[0][3])
        ):
            latest.setdefault(dataset, {})[(instance_id, config_name)] = run_dir
    flt = ExportFilter(
        statuses=config.statuses, min_reward=config.min_reward, max_reward=config.max_reward, configs=config.configs
    )
    dest = store.root / "exports" / fmt
    refs: list[RolloutRef] = []
    unreadable: dict[str, str] = {}
    for dataset in sorted(latest):
        found, bad = select_latest(latest[dataset], flt)
        refs += found
        unreadable.update(bad)
    try:
        report = write_export(fmt, refs, dest, unreadable)
    except EmptyExport as e:  # no row: no file, the report (and this metadata) say why
        if e.report is None:
            raise
        report = e.report
    skipped = "\n".join(f"- `{s.rollout}`: {s.reason}" for s in report.skipped[:SHOW_SKIPPED]) or "none"
    return MaterializeResult(
        metadata={
            "path": MetadataValue.path(report.path),
            "report": MetadataValue.path(str(dest / f"{fmt}_report.json")),
            "rollouts": report.rollouts,
            "rows": report.rows,
            "left_out": len(report.skipped),
            "left_out_rollouts": MetadataValue.md(skipped),
        }
    )


def _export_asset(key: AssetKey, fmt: str, kinds: set[str], doc: str) -> AssetsDefinition:
    @asset(
        key=key,
        group_name=EXPORTS_GROUP,
        code_version=CODE_VERSION,
        deps=[GRADED_RESULTS],
        kinds=kinds,
        description=doc,
    )
    def export_asset(
        context: AssetExecutionContext,
        config: ExportConfig,
        output_store: OutputStore,
    ) -> MaterializeResult:
        return _export(fmt, context, config, output_store)

    return export_asset


sft_export = _export_asset(
    SFT_EXPORT,
    "sft",
    {"parquet"},
    "One row per rollout: OpenAI chat messages and tools, instance, config, reward, status.",
)
rl_export = _export_asset(
    RL_EXPORT, "rl", {"parquet"}, "One row per model call: prompt/completion token ids, logprobs, loss mask, reward."
)
atif_export = _export_asset(ATIF_EXPORT, "atif", {"json"}, "One Harbor ATIF trajectory file per rollout.")
