"""rollouts → judge scores → graded results, partitioned by instance × config.

One `run_one` produces all three (the judge and the verifier run while the sandbox is alive), so they
are one step. Backfills from the UI use a single-run policy: a selection of partitions runs as few
runs, with `workers` rollouts at a time inside each. Selecting `graded_results` alone regrades the
saved submissions of the latest rollouts and leaves those rollouts as they were. Jobs are planned by
`mimo_core.plan.plan_run`, as for the CLI, with the backfill's partitions as the selection.
"""


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
from mimo_assets.helpers.engine import materializations, run_in_thread
from mimo_assets.helpers.events import CODE_VERSION, run_tags
from mimo_assets.helpers.inputs import latest, load_converted, registered_configs, upstream
from mimo_assets.partitions import partition_key, rollout_partitions, split_key
from mimo_core.config import NamedConfig
from mimo_core.datasets.base import Task
from mimo_core.plan import RunRequest, Selection, plan_run
from resources import BatchRunner, ModelEndpoint, OutputStore, SandboxBackend


class RolloutsConfig(Config):
    num_rollouts: int = 1
    workers: int = 4


def _tasks(instance_ids: set[str], store: OutputStore, latest_path: str | None) -> dict[str, Task]:
    """Rows for the selected instances: the latest converted JSONL first, then older ones."""
    files = [Path(latest_path)] if latest_path else []
    files += sorted(store.datasets_dir().glob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True)
    found: dict[str, Task] = {}
    for path in dict.fromkeys(files):
        if instance_ids <= found.keys():
            break
        if path.exists():
            for task in load_converted(path):
                if task.instance_id in instance_ids and task.instance_id not in found:
                    found[task.instance_id] = task
    missing = instance_ids - found.keys()
    if missing:
        raise ValueError(f"no converted dataset row for instance(s) {sorted(missing)[:10]}: materialize "
                         "converted_jsonl for their dataset first")
    return found


def _configs(names: set[str], context: AssetExecutionContext, model: ModelEndpoint,
             sandbox: SandboxBackend) -> dict[str, NamedConfig]:
    from mimo_core.config import load_config

    paths = registered_configs(context.instance)
    missing = names - paths.keys()
    if missing:
        raise ValueError(f"config partition(s) {sorted(missing)} have no registered file: materialize config_files")
    overrides = [o for o in (model.overrides(), sandbox.overrides()) if o]
    return {n: load_config(paths[n], overrides) for n in names}


def _regrade_sources(context: AssetExecutionContext, keys: list[tuple[str, str]]) -> dict[Path, list[tuple[str, str]]]:
    """Where each partition's latest rollouts were saved (the run folder its materialization names)."""
    sources: dict[Path, list[tuple[str, str]]] = {}
    for instance_id, config_name in keys:
        result = context.instance.fetch_materializations(
            AssetRecordsFilter(asset_key=ROLLOUTS, asset_partitions=[str(partition_key(instance_id, config_name))]),
            limit=1,
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
                  description="K agent rollouts per instance × config: trajectories, exit statuses, usage."),
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
    backfill_policy=BackfillPolicy.single_run(),
)
def rollouts(
    context: AssetExecutionContext, config: RolloutsConfig, output_store: OutputStore,
    model_endpoint: ModelEndpoint, sandbox_backend: SandboxBackend, batch_runner: BatchRunner,
) -> Iterator[AssetMaterialization]:
    keys = [split_key(k) for k in context.partition_keys]
    graded_only = set(context.selected_asset_keys) == {GRADED_RESULTS}
    _, _, meta = latest(context.instance, CONVERTED_JSONL)
    tasks = _tasks({i for i, _ in keys}, output_store, meta.get("path"))
    configs = _configs({c for _, c in keys}, context, model_endpoint, sandbox_backend)
    output = output_store.run_dir(context.run.run_id)
    request = RunRequest(dataset=str(meta.get("path") or ""), selection=Selection(partitions=keys),
                         configs=[c.path for c in configs.values()], num_rollouts=config.num_rollouts,
                         output_dir=output, run_id=context.run.run_id)
    rows, named = list(tasks.values()), list(configs.values())
    if graded_only:  # regrade the saved submissions, grouped by the run folder that holds them
        jobs = [job for source, pairs in _regrade_sources(context, keys).items()
                for job in plan_run(request.model_copy(update={"recalc": str(source),
                                                              "selection": Selection(partitions=pairs)}),
                                    rows, named).jobs]
    else:
        jobs = plan_run(request, rows, named).jobs
    context.log.info(f"{len(jobs)} rollouts over {len(keys)} partitions, {config.workers} at a time -> {output}")
    records = run_in_thread(jobs, config.workers, batch_runner.ray_options())
    yield from emit_all(context, materializations(
        context.instance, records, [j.key for j in jobs], output,
        upstream(context.instance), run_tags(), graded_only=graded_only, log=context.log,
        always_judge=JUDGE_SCORES in context.selected_asset_keys,
    ))
