"""Rerun the failed partitions, however scattered, in a few chunked runs (docs/dagster.md#rerun-failed).

A UI backfill cuts its selection into contiguous ranges of the registered keys, so "retry the failed
ones" over scattered partitions launched one run per partition (~1,000 runs at 1 % of 100,000). Here:

- the `rerun_failed` job (Launchpad → Launch run; its config is optional): its step names the partitions
  to rerun (`partitions`, or, left empty, every partition whose latest graded result is a failure: the
  `failed` observation eventlog/events.partition_failures logs) and how they are cut;
- the `rerun_failed_in_chunks` run-status sensor (running by default; needs the daemon) answers each
  successful `rerun_failed` run with one `rerun_cells` run per chunk of at most
  `MIMOAGENT_BACKFILL_PARTITIONS_PER_RUN` keys (default 100; 0 = one run), in the keys' registered order,
  each tagged `mimoagent/rerun_of=<the request's run id>`;
- a `rerun_cells` run carries its keys in its run config and runs them as a backfill's chunk does
  (assets/rollouts.cell_events): every key once, whatever lies between them.
"""

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from dagster import (
    AssetMaterialization,
    Config,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    MetadataValue,
    OpExecutionContext,
    Output,
    RunRequest,
    RunStatusSensorContext,
    SensorResult,
    SkipReason,
    job,
    op,
    run_status_sensor,
)
from pydantic import Field

from mimo_assets.asset_keys import GRADED_RESULTS
from mimo_assets.assets.rollouts import RolloutsConfig, cell_events
from mimo_assets.dagster_private import asset_event_summaries
from mimo_assets.eventlog.batching import emit_all
from mimo_assets.eventlog.events import FAILED
from mimo_assets.partitions import ROLLOUT_DIM
from mimo_core.settings import CodeLocationSettings
from resources import BatchRunner, ModelEndpoint, OutputStore, SandboxBackend

RERUN_FAILED_JOB = "rerun_failed"
RERUN_CELLS_JOB = "rerun_cells"
RERUN_OF_TAG = "mimoagent/rerun_of"
REQUEST_OP = "rerun_failed_request"
CELLS_OP = "rerun_cells_op"


def failed_partitions(instance: DagsterInstance) -> list[str]:
    """Partitions whose latest graded_results event is a failure (a `failed` observation after their
    last graded materialization, or with none), in the registered order of the keys."""
    graded: dict[str, int] = {}
    for event in asset_event_summaries(instance, GRADED_RESULTS):
        if event.partition is not None:
            graded[event.partition] = event.storage_id
    failed: dict[str, int] = {}
    for event in asset_event_summaries(instance, GRADED_RESULTS, observations=True):
        if event.partition is not None and event.metadata.get("status") == FAILED:
            failed[event.partition] = event.storage_id
    keys = {k for k, sid in failed.items() if graded.get(k, -1) < sid}
    return in_registered_order(instance, keys)


def in_registered_order(instance: DagsterInstance, keys: set[str] | Sequence[str]) -> list[str]:
    """The keys in the order they were registered (Dagster's order of the dynamic partitions); keys that
    are not registered partitions are left out."""
    wanted = set(keys)
    return [k for k in instance.get_dynamic_partitions(ROLLOUT_DIM) if k in wanted]


def chunks(keys: Sequence[str], per_run: int) -> list[list[str]]:
    """Runs of at most `per_run` keys (0: all in one)."""
    if not keys:
        return []
    size = per_run or len(keys)
    return [list(keys[i : i + size]) for i in range(0, len(keys), size)]


class RerunFailedConfig(Config):
    """Everything optional: Launch run as it opens reruns every failed partition."""

    partitions: list[str] = Field(
        default_factory=list,
        description="partition keys to rerun (config|dataset/"
        "instance); empty: every partition whose latest graded result is a failure",
    )
    num_rollouts: int = Field(default=1, ge=1, description="K rollouts per partition, as in a backfill")
    workers: int = Field(default=4, ge=1, description="rollouts at a time in each run")


class RerunCellsConfig(RerunFailedConfig):
    """One chunk: the keys it runs (set by the rerun_failed_in_chunks sensor)."""


@op(name=REQUEST_OP)
def rerun_failed_request(context: OpExecutionContext, config: RerunFailedConfig) -> Output[None]:
    """Name the partitions to rerun and how they are cut into runs; the sensor launches those runs."""
    if config.partitions:
        keys = in_registered_order(context.instance, config.partitions)
        unknown = sorted(set(config.partitions) - set(keys))
        if unknown:
            raise ValueError(f"not a registered partition: {unknown[:10]}")
    else:
        keys = failed_partitions(context.instance)
    per_run = CodeLocationSettings.read().backfill_partitions_per_run
    runs = chunks(keys, per_run)
    context.log.info(f"{len(keys)} partition(s) to rerun in {len(runs)} run(s) of at most {per_run or len(keys)}")
    return Output(
        None,
        metadata={
            "partitions": MetadataValue.json(keys),
            "runs": len(runs),
            "partitions_per_run": per_run,
            "count": len(keys),
        },
    )


@job(
    name=RERUN_FAILED_JOB,
    description="Rerun failed partitions (every one by default, or those listed) in "
    "chunked runs of rerun_cells, however scattered they are (the rerun_failed_in_chunks sensor launches them).",
)
def rerun_failed_job() -> None:
    rerun_failed_request()


@op(name=CELLS_OP, out={})
def rerun_cells_op(
    context: OpExecutionContext,
    config: RerunCellsConfig,
    output_store: OutputStore,
    model_endpoint: ModelEndpoint,
    sandbox_backend: SandboxBackend,
    batch_runner: BatchRunner,
) -> Iterator[AssetMaterialization]:
    """Run the listed partitions as a backfill's chunk does: rollouts → judge scores → graded results."""
    rollouts = RolloutsConfig(num_rollouts=config.num_rollouts, workers=config.workers)
    yield from emit_all(
        context,
        cell_events(context, config.partitions, rollouts, output_store, model_endpoint, sandbox_backend, batch_runner),
    )


@job(name=RERUN_CELLS_JOB, description="One chunk of a rerun: the listed partitions' rollouts, in one run.")
def rerun_cells_job() -> None:
    rerun_cells_op()


def _requested(instance: DagsterInstance, run_id: str) -> dict:
    """What the request run's step said: its output's metadata."""
    conn = instance.get_records_for_run(run_id, of_type=DagsterEventType.STEP_OUTPUT)
    for record in conn.records:
        event = record.event_log_entry.dagster_event
        if event is not None and event.step_key == REQUEST_OP:
            return {k: v.value for k, v in event.step_output_data.metadata.items()}
    return {}


@run_status_sensor(
    run_status=DagsterRunStatus.SUCCESS,
    monitored_jobs=[rerun_failed_job],
    request_job=rerun_cells_job,
    default_status=DefaultSensorStatus.RUNNING,
    name="rerun_failed_in_chunks",
    minimum_interval_seconds=5,
)
def rerun_failed_in_chunks(context: RunStatusSensorContext) -> SensorResult | SkipReason:
    """One rerun_cells run per chunk of a successful rerun_failed run's partitions."""
    run = context.dagster_run
    said = _requested(context.instance, run.run_id)
    keys = list(said.get("partitions") or [])
    if not keys:
        return SkipReason(f"rerun_failed run {run.run_id}: nothing to rerun")
    run_config: Mapping[str, Any] = run.run_config or {}  # the run's config: plain JSON values
    cfg = run_config.get("ops", {}).get(REQUEST_OP, {}).get("config", {})
    extra = {k: cfg[k] for k in ("num_rollouts", "workers") if k in cfg}
    parts = chunks(keys, int(said.get("partitions_per_run", 0)))
    return SensorResult(
        run_requests=[
            RunRequest(
                run_key=f"{run.run_id}-{i}",
                tags={RERUN_OF_TAG: run.run_id},
                run_config={"ops": {CELLS_OP: {"config": {"partitions": part, **extra}}}},
            )
            for i, part in enumerate(parts)
        ]
    )
