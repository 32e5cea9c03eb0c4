"""rollouts → judge scores → graded results, partitioned by planned cell (`config|dataset/instance`).

One `run_one` produces all three (the judge and the verifier run while the sandbox is alive), so they
are one step. Backfills from the UI use Dagster's multi-run policy: a selection of partitions runs in
chunks of at most `MIMOAGENT_BACKFILL_PARTITIONS_PER_RUN` partitions (default 100; 0 = single-run),
runs that the instance's run queue starts side by side, with `workers` rollouts at a time inside each.
Selecting `graded_results` alone regrades the saved submissions of the latest rollouts and leaves those
rollouts as they were. Jobs are planned by `mimo_core.plan.plan_run`, as for the CLI, with the
backfill's (or chunk's) partitions as the selection.
"""


import os
from collections.abc import Iterator
from pathlib import Path

from dagster import (
    AssetExecutionContext,
    AssetMaterialization,
    AssetRecordsFilter,
    AssetSpec,
    BackfillPolicy,
    Config,
    multi_asset,
)

from mimo_assets.asset_keys import (
    CONFIG_FILES,
    CONVERTED_JSONL,
    GRADED_RESULTS,
    JUDGE_SCORES,
    ROLLOUTS,
    ROLLOUTS_GROUP,
)
from mimo_assets.helpers.batching import emit_all
from mimo_assets.helpers.engine import Event, materializations, run_in_thread
from mimo_assets.helpers.events import CODE_VERSION, run_tags
from mimo_assets.helpers.inputs import converted_files, load_converted, registered_configs, upstream
from mimo_assets.partitions import partition_key, rollout_partitions, split_key
from mimo_core.config import NamedConfig
from mimo_core.datasets.base import Task
from mimo_core.plan import RunRequest, Selection, plan_run
from resources import BatchRunner, ModelEndpoint, OutputStore, SandboxBackend

PARTITIONS_PER_RUN_ENV = "MIMOAGENT_BACKFILL_PARTITIONS_PER_RUN"
DEFAULT_PARTITIONS_PER_RUN = 100


def backfill_policy(raw: str | None = None) -> BackfillPolicy:
    """Chunks of N partitions per backfill run, so a big backfill's runs can go in parallel; 0 = one run
    per partition range (Dagster's single-run policy). Read when the code location loads."""
    text = (os.environ.get(PARTITIONS_PER_RUN_ENV, "") if raw is None else raw).strip()
    try:
        n = int(text) if text else DEFAULT_PARTITIONS_PER_RUN
    except ValueError:
        n = -1
    if n < 0:
        raise ValueError(f"{PARTITIONS_PER_RUN_ENV}={text!r}: expected a whole number of partitions (0 = single run)")
    return BackfillPolicy.multi_run(n) if n else BackfillPolicy.single_run()


class RolloutsConfig(Config):
    num_rollouts: int = 1
    workers: int = 4


def _tasks(dataset: str, instance_ids: set[str], store: OutputStore) -> tuple[Path, dict[str, Task]]:
    """The dataset's latest converted JSONL and its rows for the selected instances."""
    files = converted_files(store.datasets_dir(), dataset)
    if not files:
        raise ValueError(f"no converted dataset {dataset!r}: materialize converted_jsonl for it first")
    found = {t.instance_id: t for t in load_converted(files[0]) if t.instance_id in instance_ids}
    missing = instance_ids - found.keys()
    if missing:
        raise ValueError(f"dataset {dataset!r} ({files[0]}) has no row for instance(s) {sorted(missing)[:10]}")
    return files[0], found


def _configs(names: set[str], context: AssetExecutionContext, model: ModelEndpoint,
             sandbox: SandboxBackend) -> dict[str, NamedConfig]:
    from mimo_core.config import load_config

    paths = registered_configs(context.instance)
    missing = names - paths.keys()
    if missing:
        raise ValueError(f"config(s) {sorted(missing)} of these partitions have no registered file: "
                         "materialize config_files")
    overrides = [o for o in (model.overrides(), sandbox.overrides()) if o]
    return {n: load_config(paths[n], overrides) for n in names}


def _regrade_sources(
    context: AssetExecutionContext, dataset: str, keys: list[tuple[str, str]],
) -> dict[Path, list[tuple[str, str]]]:
    """Where each partition's latest rollouts were saved (the run folder its materialization names)."""
    sources: dict[Path, list[tuple[str, str]]] = {}
    for instance_id, config_name in keys:
        pk = str(partition_key(dataset, instance_id, config_name))
        result = context.instance.fetch_materializations(
            AssetRecordsFilter(asset_key=ROLLOUTS, asset_partitions=[pk]), limit=1,
        )
        if not result.records or result.records[0].asset_materialization is None:
            raise ValueError(f"{instance_id} [{config_name}]: no rollouts materialization to regrade")
        source = Path(str(result.records[0].asset_materialization.metadata["output_dir"].value))
        sources.setdefault(source, []).append((instance_id, config_name))
    return sources


@multi_asset(
    specs=[
        AssetSpec(ROLLOUTS, deps=[CONVERTED_JSONL, CONFIG_FILES], group_name=ROLLOUTS_GROUP, skippable=True,
                  code_version=CODE_VERSION,
                  partitions_def=rollout_partitions, kinds={"python"},
                  description="K agent rollouts per planned instance and config: trajectories, exit statuses, usage."),
        AssetSpec(JUDGE_SCORES, deps=[ROLLOUTS], group_name=ROLLOUTS_GROUP, code_version=CODE_VERSION, skippable=True,
                  partitions_def=rollout_partitions,
                  description="Rubric scores from the in-environment judge agent (empty without a judge)."),
        AssetSpec(GRADED_RESULTS, deps=[ROLLOUTS, JUDGE_SCORES], group_name=ROLLOUTS_GROUP, skippable=True,
                  code_version=CODE_VERSION,
                  partitions_def=rollout_partitions,
                  description="The verifier's reward per rollout; a recalc rematerializes only this."),
    ],
    name="rollouts",
    can_subset=True,
    backfill_policy=backfill_policy(),
)
def rollouts(
    context: AssetExecutionContext, config: RolloutsConfig, output_store: OutputStore,
    model_endpoint: ModelEndpoint, sandbox_backend: SandboxBackend, batch_runner: BatchRunner,
) -> Iterator[AssetMaterialization]:
    by_dataset: dict[str, list[tuple[str, str]]] = {}
    for dataset, instance_id, config_name in map(split_key, context.partition_keys):
        by_dataset.setdefault(dataset, []).append((instance_id, config_name))
    graded_only = set(context.selected_asset_keys) == {GRADED_RESULTS}
    configs = _configs({c for pairs in by_dataset.values() for _, c in pairs}, context, model_endpoint,
                       sandbox_backend)
    run_dir = output_store.run_dir(context.run.run_id)
    inputs = upstream(context.instance)

    def events() -> Iterator[list[Event]]:
        for dataset, pairs in sorted(by_dataset.items()):  # one folder per dataset: ids may repeat across them
            output = run_dir if len(by_dataset) == 1 else run_dir / dataset
            path, tasks = _tasks(dataset, {i for i, _ in pairs}, output_store)
            request = RunRequest(dataset=str(path), selection=Selection(partitions=pairs),
                                 configs=[c.path for c in configs.values()], num_rollouts=config.num_rollouts,
                                 output_dir=output, run_id=context.run.run_id)
            rows, named = list(tasks.values()), list(configs.values())
            if graded_only:  # regrade the saved submissions, grouped by the run folder that holds them
                jobs = [job for source, part in _regrade_sources(context, dataset, pairs).items()
                        for job in plan_run(request.model_copy(update={"recalc": str(source),
                                                                      "selection": Selection(partitions=part)}),
                                            rows, named).jobs]
            else:
                jobs = plan_run(request, rows, named).jobs
            context.log.info(f"{dataset}: {len(jobs)} rollouts over {len(pairs)} partitions, "
                             f"{config.workers} at a time -> {output}")
            yield from materializations(
                context.instance, dataset, run_in_thread(jobs, config.workers, batch_runner.ray_options()),
                [j.key for j in jobs], output,
                inputs, run_tags(), graded_only=graded_only, log=context.log,
                always_judge=JUDGE_SCORES in context.selected_asset_keys,
            )

    yield from emit_all(context, events())
