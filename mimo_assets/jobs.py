"""Jobs: `evaluate` (one run per dataset × config set, however many partitions it covers),
`refresh_analytics` and `register_configs`. A CLI run is recorded as a run of `cli_run`
(cli_recording/job.py)."""

from collections.abc import Iterator

from dagster import (
    AssetMaterialization,
    AssetSelection,
    OpExecutionContext,
    define_asset_job,
    in_process_executor,
    job,
    op,
)

from mimo_assets.asset_keys import ANALYTICS_GROUP, CONFIG_FILES
from mimo_assets.evaluate import EvaluateConfig, execute
from mimo_assets.eventlog.batching import emit_all
from mimo_assets.eventlog.events import run_tags
from resources import BatchRunner, ModelEndpoint, OutputStore, SandboxBackend

EVALUATE_JOB = "evaluate"


@op(out={})
def evaluate_op(
    context: OpExecutionContext,
    config: EvaluateConfig,
    output_store: OutputStore,
    model_endpoint: ModelEndpoint,
    sandbox_backend: SandboxBackend,
    batch_runner: BatchRunner,
) -> Iterator[AssetMaterialization]:
    """Run rollouts; log each partition's materializations as it finishes."""
    tags = run_tags({k: v for k, v in context.run.tags.items() if k.startswith("mimoagent/")})
    yield from emit_all(
        context,
        execute(
            context.instance,
            config,
            context.run.run_id,
            output_store,
            model_endpoint,
            sandbox_backend,
            context.log,
            tags,
            batch_runner,
        ),
    )


@job(name=EVALUATE_JOB, description="Evaluate a dataset × config set: rollouts, judge scores, graded results.")
def evaluate_job() -> None:
    evaluate_op()


analytics_job = define_asset_job(
    "refresh_analytics",
    selection=AssetSelection.groups(ANALYTICS_GROUP),
    executor_def=in_process_executor,  # seven small steps: one process, not one process (and import) each
    description="Rebuild the results table and every analytics asset (and run their checks).",
)
register_configs_job = define_asset_job("register_configs", selection=AssetSelection.assets(CONFIG_FILES))
