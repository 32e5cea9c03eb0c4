"""`cli_run`: the Dagster run a `mimoagent` CLI run is recorded as, one per CLI run, tagged like it
(`mimoagent/source=cli`, its run id, date, dataset, configs, output folder, and its A/B design).

Its step records a registry entry (`entry` in the run config: how the `cli_runs_to_record` sensor
launches it) or, in a process that built the feed itself (ingest.py, the live recorder), the `cli_feed`
resource. A run of a CLI that was killed records what it finished and fails, so it never shows as
succeeded.
"""

# No `from __future__ import annotations`: Dagster reads the op's parameter types at definition.
from collections.abc import Callable, Iterator
from pathlib import Path

from dagster import AssetMaterialization, Config, Failure, OpExecutionContext, ResourceParam, job, op
from pydantic import Field

from mimo_assets.analysis.designs import design_tags
from mimo_assets.cli_recording import registry
from mimo_assets.cli_recording.feed import Feed, RecordingHeader
from mimo_assets.cli_recording.record import KILLED_PREFIX, record_cli_run
from mimo_assets.eventlog.batching import emit_all
from mimo_assets.partitions import dataset_name
from resources import OutputStore

CLI_RUN_JOB = "cli_run"
OP = "record_cli_run"


def cli_run_tags(feed_or_header: Feed | RecordingHeader, date: str) -> dict[str, str]:
    """The Dagster run's tags: the CLI run's identity (searchable in the UI) and its A/B design."""
    header = feed_or_header.header if isinstance(feed_or_header, Feed) else feed_or_header
    req = header.request
    tags = {
        "mimoagent/source": "cli",
        "mimoagent/run_id": req.run_id,
        "mimoagent/date": date,
        "mimoagent/dataset": req.dataset[:200],
        "mimoagent/configs": ",".join(header.config_names)[:200],
        "mimoagent/output_dir": str(req.output_dir)[:200],
    }
    if req.recalc:
        tags["mimoagent/recalc"] = req.recalc[:200]
    tags.update(design_tags(req, header.config_names, dataset_name(req.dataset, req.split)))
    return tags


class CliRunConfig(Config):
    entry: str = Field(
        default="",
        description="the registry entry (<Dagster home>/cli_runs/*.json) to record; "
        "set by the cli_runs_to_record sensor",
    )


def record_feed(
    context: OpExecutionContext,
    feed: Feed,
    store: OutputStore,
    recorded: Callable[[], None] = lambda: None,
) -> Iterator[AssetMaterialization]:
    """Record a feed; `recorded` runs once its events are stored (before the step fails, if it does)."""
    home_pending = registry.pending_run_ids(_home())
    failure: Failure | None = None
    try:
        yield from emit_all(
            context,
            record_cli_run(context.instance, feed, store.datasets_dir(), context.log, context.run.run_id, home_pending),
        )
    except Failure as e:  # infrastructure errors: recorded, and the run is red
        failure = e
    recorded()
    if failure is not None:
        raise failure
    if not feed.complete:
        raise Failure(
            description=f"{KILLED_PREFIX} (killed?): what it finished is recorded; the next run over "
            f"{feed.header.request.output_dir} does the rest ({feed.n_planned} rollouts were "
            "planned)",
            allow_retries=False,
        )


def _home() -> Path:
    from mimo_assets.instance.home import dagster_home

    return dagster_home()


@op(name=OP, out={})
def record_cli_run_op(
    context: OpExecutionContext,
    config: CliRunConfig,
    output_store: OutputStore,
    cli_feed: ResourceParam[Feed | None],
) -> Iterator[AssetMaterialization]:
    """Record one CLI run: its registry entry, or the feed handed to this process."""
    if cli_feed is not None:
        yield from record_feed(context, cli_feed, output_store)
        return
    path = Path(config.entry)
    with registry.claimed(path) as entry:
        if entry is None:
            context.log.info(f"{path}: already recorded, or being recorded by another process")
            return
        feed = registry.feed_from_entry(entry, path)
        yield from record_feed(context, feed, output_store, lambda: registry.done(path))


@job(name=CLI_RUN_JOB, description="A `mimoagent` CLI run, recorded: its rollouts, judge scores and graded results.")
def cli_run_job() -> None:
    record_cli_run_op()
