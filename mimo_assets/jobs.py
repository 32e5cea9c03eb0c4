"""Jobs: `evaluate` (one run per dataset × config set, however many partitions it covers; also the run
a CLI invocation is recorded as), `refresh_analytics` and `register_configs`."""

from collections.abc import Iterator
from typing import Any

from dagster import (
    AssetMaterialization,
    AssetSelection,
    Config,
    OpExecutionContext,
    ResourceParam,
    define_asset_job,
    in_process_executor,
    job,
    op,
)
from pydantic import Field

from mimo_assets.asset_keys import ANALYTICS_GROUP, CONFIG_FILES
from mimo_assets.cli_recording.feed import Feed
from mimo_assets.cli_recording.record import record_cli_run
from mimo_assets.helpers.batching import emit_all
from mimo_assets.helpers.evaluate import execute
from mimo_assets.helpers.events import run_tags
from mimo_core.plan import RunRequest, Selection
from resources import BatchRunner, ModelEndpoint, OutputStore, SandboxBackend

EVALUATE_JOB = "evaluate"


class EvaluateConfig(Config):
    """A dataset × config set, like a `mimoagent` command line (launchpad, schedules)."""

    dataset: str = Field(default="", description="JSONL/parquet/Harbor folder/HF name; default $MIMOAGENT_DATASET")
    split: str | None = None
    filter: str | None = Field(default=None, description="keep instance ids matching this regex")
    shuffle: bool = False
    slice: str | None = Field(default=None, description="A:B, after filter and shuffle")
    seed: int = Field(default=0, description="seed of the shuffle and of the A/B config assignment")
    configs: list[str] = Field(default_factory=list, description="config files; default: every registered one")
    num_rollouts: int = 1
    workers: int = 4
    redo_existing: bool = False
    rerun_status: list[str] = Field(default_factory=list, description="rerun exactly the finished rollouts with "
                                                                      "these exit statuses (e.g. model_error)")
    paired: bool = Field(default=False, description="run every config on every instance (paired A/B) instead of "
                                                    "assigning one config per instance at random")
    recalc: str | None = Field(default=None, description="gt, or an earlier output folder to regrade")
    output_dir: str = Field(default="", description="the run's output folder; default <output root>/runs/<run id>")

    def to_request(self, **resolved: Any) -> RunRequest:
        """The planner's request; `resolved` gives what the run fills in (dataset, configs, output...)."""
        selection = Selection(filter=self.filter, shuffle=self.shuffle, slice=self.slice, seed=self.seed)
        return RunRequest(split=self.split, selection=selection, num_rollouts=self.num_rollouts,
                          redo_existing=self.redo_existing,
                          rerun_status=self.rerun_status, recalc=self.recalc, paired=self.paired, **resolved)


@op(out={})
def evaluate_op(
    context: OpExecutionContext, config: EvaluateConfig, output_store: OutputStore,
    model_endpoint: ModelEndpoint, sandbox_backend: SandboxBackend, cli_feed: ResourceParam[Feed | None],
    batch_runner: BatchRunner,
) -> Iterator[AssetMaterialization]:
    """Run (or, given a CLI run's feed, record) rollouts; log each partition's materializations as it finishes."""
    if cli_feed is not None:
        yield from emit_all(context, record_cli_run(context.instance, cli_feed, output_store.datasets_dir(),
                                                    context.log))
        return
    tags = run_tags({k: v for k, v in context.run.tags.items() if k.startswith("mimoagent/")})
    yield from emit_all(context, execute(context.instance, config, context.run.run_id, output_store, model_endpoint,
                                         sandbox_backend, context.log, tags, batch_runner))


@job(name=EVALUATE_JOB, description="Evaluate a dataset × config set: rollouts, judge scores, graded results.")
def evaluate_job() -> None:
    evaluate_op()


analytics_job = define_asset_job(
    "refresh_analytics", selection=AssetSelection.groups(ANALYTICS_GROUP),
    executor_def=in_process_executor,  # seven small steps: one process, not one process (and import) each
    description="Rebuild the results table and every analytics asset (and run their checks).",
)
register_configs_job = define_asset_job("register_configs", selection=AssetSelection.assets(CONFIG_FILES))
