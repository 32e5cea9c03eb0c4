"""The `evaluate` job: one run per dataset × config set, however many partitions it covers."""


from collections.abc import Iterator

from dagster import AssetMaterialization, OpExecutionContext, job, op

from mimo_assets.cli_recording.feed import get_feed
from mimo_assets.runs import EvaluateConfig, execute, record_cli_run, run_tags
from resources import ModelEndpoint, OutputStore, SandboxBackend

EVALUATE_JOB = "evaluate"


@op(out={})
def evaluate_op(
    context: OpExecutionContext, config: EvaluateConfig, output_store: OutputStore,
    model_endpoint: ModelEndpoint, sandbox_backend: SandboxBackend,
) -> Iterator[AssetMaterialization]:
    """Run (or, for a CLI run, record) rollouts; log each partition's materializations as it finishes."""
    if config.feed:
        yield from record_cli_run(context.instance, get_feed(config.feed), output_store.datasets_dir(), context.log)
        return
    tags = run_tags({k: v for k, v in context.run.tags.items() if k.startswith("mimoagent/")})
    yield from execute(context.instance, config, context.run.run_id, output_store, model_endpoint, sandbox_backend,
                       context.log, tags)


@job(name=EVALUATE_JOB, description="Evaluate a dataset × config set: rollouts, judge scores, graded results.")
def evaluate_job() -> None:
    evaluate_op()
