"""`evaluate_fanout`: one big evaluation split into row chunks that run as separate steps, each its own
Kubernetes Job under dagster-k8s's `k8s_job_executor` (run config: deploy/run_config/evaluate_fanout.yaml).

The `evaluate` job stays one in-process step (the CLI records into it; launchpad and schedules use it).
This variant is for a cluster: one run pod plans the chunks, then every chunk is a step pod driving
`workers` sandbox pods, with the executor's `max_concurrent` capping step pods in flight. Each chunk
writes its own folder (`<output_dir>/chunk_0003`), so a retried step resumes only its chunk.
`execute_in_process` (tests, a laptop) ignores the executor and runs the chunks one after another.
"""

from collections.abc import Iterator
from pathlib import Path

from dagster import (
    AssetMaterialization,
    Config,
    DynamicOut,
    DynamicOutput,
    OpExecutionContext,
    job,
    op,
)
from dagster_k8s import k8s_job_executor
from pydantic import Field

from mimo_assets.evaluate import EvaluateConfig, execute
from mimo_assets.eventlog.batching import emit_all
from mimo_assets.eventlog.events import run_tags
from resources import BatchRunner, ModelEndpoint, OutputStore, SandboxBackend

FANOUT_JOB = "evaluate_fanout"


class ChunkConfig(Config):
    """How the selected rows (after the evaluate config's filter and shuffle) are cut into steps."""

    rows: int = Field(
        gt=0,
        description="how many rows the filter/shuffle leaves (at most); the last chunk is "
        "cut short at the dataset's end",
    )
    chunk_size: int = Field(default=500, gt=0, description="rows per step (one step = one Kubernetes Job)")


@op(out=DynamicOut(str))
def chunk_slices(config: ChunkConfig) -> Iterator[DynamicOutput[str]]:
    """One `A:B` slice per chunk; the mapping key (`chunk_0000`) names its step and its output folder."""
    for i, start in enumerate(range(0, config.rows, config.chunk_size)):
        yield DynamicOutput(f"{start}:{min(start + config.chunk_size, config.rows)}", mapping_key=f"chunk_{i:04d}")


@op(out={})
def evaluate_chunk(
    context: OpExecutionContext,
    chunk: str,
    config: EvaluateConfig,
    output_store: OutputStore,
    model_endpoint: ModelEndpoint,
    sandbox_backend: SandboxBackend,
    batch_runner: BatchRunner,
) -> Iterator[AssetMaterialization]:
    """The `evaluate` op's work on one slice, into its own folder under the run's output folder."""
    if config.slice:
        raise ValueError(
            f"evaluate_fanout: ops.evaluate_chunk.config.slice={config.slice!r} is set; "
            "the chunks are the slices (set ops.chunk_slices.config.rows/chunk_size)"
        )
    base = Path(config.output_dir).expanduser() if config.output_dir else output_store.run_dir(context.run.run_id)
    key = context.get_mapping_key()
    if key is None:
        raise ValueError("evaluate_chunk runs as a mapped step (one per chunk_slices output)")
    cfg = config.model_copy(update={"slice": chunk, "output_dir": str(base / key)})
    tags = run_tags({k: v for k, v in context.run.tags.items() if k.startswith("mimoagent/")})
    yield from emit_all(
        context,
        execute(
            context.instance,
            cfg,
            context.run.run_id,
            output_store,
            model_endpoint,
            sandbox_backend,
            context.log,
            tags,
            batch_runner,
            design_dir=base,
        ),
    )


@job(
    name=FANOUT_JOB,
    executor_def=k8s_job_executor,
    description="Evaluate a dataset × config set in row chunks, one Kubernetes Job per chunk (needs "
    "K8sRunLauncher; docs/kubernetes.md).",
)
def evaluate_fanout_job() -> None:
    chunk_slices().map(evaluate_chunk)
