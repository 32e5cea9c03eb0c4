"""rollouts → judge scores → graded results, partitioned by planned cell (`config|dataset/instance`).

One `run_one` produces all three (the judge and the verifier run while the sandbox is alive), so they
are one step. Backfills from the UI use Dagster's multi-run policy: a selection of partitions runs in
chunks of at most `MIMOAGENT_BACKFILL_PARTITIONS_PER_RUN` partitions (default 100; 0 = single-run),
runs that the instance's run queue starts side by side, with `workers` rollouts at a time inside each.
Selecting `graded_results` alone regrades the saved submissions of the latest rollouts and leaves those
rollouts as they were. Jobs are planned by `mimo_core.run.plan.plan_run`, as for the CLI, with the
backfill's (or chunk's) partitions as the selection.
"""

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
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
from mimo_assets.cell_result import latest_materialization
from mimo_assets.eventlog.batching import emit_all
from mimo_assets.eventlog.events import CODE_VERSION, Kept, run_tags
from mimo_assets.eventlog.stream import Event, materializations, run_in_thread
from mimo_assets.inputs import converted_files, load_converted, registered_configs, upstream
from mimo_assets.partitions import partition_key, rollout_partitions, split_key
from mimo_core.config import NamedConfig
from mimo_core.datasets.base import Task
from mimo_core.errors import ConfigError
from mimo_core.run.job import GT, RolloutJob
from mimo_core.run.plan import RunRequest, Selection, plan_run
from mimo_core.settings import CodeLocationSettings, parse_partitions_per_run
from resources import BatchRunner, ModelEndpoint, OutputStore, SandboxBackend

PARTITIONS_PER_RUN_ENV = CodeLocationSettings.variable("backfill_partitions_per_run")
DEFAULT_PARTITIONS_PER_RUN = parse_partitions_per_run("")


def backfill_policy(raw: str | None = None) -> BackfillPolicy:
    """Chunks of N partitions per backfill run, so a big backfill's runs can go in parallel; 0 = one run
    per partition range (Dagster's single-run policy). Read when the code location loads; `raw` instead
    of $MIMOAGENT_BACKFILL_PARTITIONS_PER_RUN."""
    if raw is None:
        n = CodeLocationSettings.read().backfill_partitions_per_run
    else:
        try:
            n = parse_partitions_per_run(raw)
        except ValueError as e:
            raise ValueError(f"{PARTITIONS_PER_RUN_ENV}={raw.strip()!r}: {e}") from None
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


def _configs(
    names: set[str], context: AssetExecutionContext, model: ModelEndpoint, sandbox: SandboxBackend
) -> dict[str, NamedConfig]:
    from mimo_core.config_checks import load_config

    paths = registered_configs(context.instance)
    missing = names - paths.keys()
    if missing:
        raise ValueError(
            f"config(s) {sorted(missing)} of these partitions have no registered file: materialize config_files"
        )
    overrides = [o for o in (model.overrides(), sandbox.overrides()) if o]
    return {n: load_config(paths[n], overrides) for n in names}


def _nothing_to_regrade(context: AssetExecutionContext, pk: str) -> str:
    """Why a partition without a rollouts materialization has nothing to regrade, in a user's words."""
    graded = latest_materialization(context.instance, GRADED_RESULTS, pk)
    if graded is not None and "recalc" in graded.metadata and graded.metadata["recalc"].value == GT:
        return "its only graded result is a recalc of the reference solution (--recalc-input gt): no saved submission"
    if graded is not None:
        return "its graded result came from a regrade, and no rollout of it was ever recorded"
    return "no rollout of it finished (never run, or only infrastructure errors)"


def _regrade_sources(
    context: AssetExecutionContext,
    dataset: str,
    keys: list[tuple[str, str]],
) -> tuple[dict[Path, list[tuple[str, str]]], dict[tuple[str, str], str]]:
    """Where each partition's latest rollouts were saved (the run folder its materialization names), and
    the partitions with nothing to regrade, with why."""
    sources: dict[Path, list[tuple[str, str]]] = {}
    skipped: dict[tuple[str, str], str] = {}
    for instance_id, config_name in keys:
        pk = str(partition_key(dataset, instance_id, config_name))
        mat = latest_materialization(context.instance, ROLLOUTS, pk)
        if mat is None or "output_dir" not in mat.metadata:
            skipped[(instance_id, config_name)] = _nothing_to_regrade(context, pk)
            continue
        sources.setdefault(Path(str(mat.metadata["output_dir"].value)), []).append((instance_id, config_name))
    return sources, skipped


def _regrade_jobs(
    context: AssetExecutionContext,
    dataset: str,
    request: RunRequest,
    rows: list[Task],
    named: list[NamedConfig],
) -> list[RolloutJob]:
    """Regrade the saved submissions of the selected partitions, grouped by the run folder that holds them.
    A partition with nothing to regrade is skipped with a warning naming it and why, never a traceback:
    the rest of the backfill goes on."""
    pairs = request.selection.partitions or []
    sources, skipped = _regrade_sources(context, dataset, pairs)
    jobs: list[RolloutJob] = []
    for source, part in sources.items():
        try:
            regrade = request.model_copy(update={"recalc": str(source), "selection": Selection(partitions=part)})
            found = plan_run(regrade, rows, named).jobs
        except ConfigError as e:
            skipped.update({cell: str(e) for cell in part})
            continue
        have = {(j.task.instance_id, j.config.name) for j in found}
        skipped.update(
            {
                cell: f"no finished rollout of it in {source} (only infrastructure errors, or its files are gone)"
                for cell in part
                if cell not in have
            }
        )
        jobs += found
    for (instance_id, config_name), why in skipped.items():
        context.log.warning(f"regrade of {partition_key(dataset, instance_id, config_name)} skipped: {why}")
    return jobs


def cell_events(
    context: Any,
    keys: Sequence[str],
    config: RolloutsConfig,
    output_store: OutputStore,
    model_endpoint: ModelEndpoint,
    sandbox_backend: SandboxBackend,
    batch_runner: BatchRunner,
    graded_only: bool = False,
    always_judge: bool = False,
    dagster_planned: tuple[AssetKey, ...] = (),
) -> Iterator[list[Event | Kept]]:
    """Run (or regrade) the rollouts of the given partition keys, one output folder per dataset under the
    Dagster run's folder, and build each partition's events as they finish: a backfill's chunk (the
    `rollouts` asset) and a `rerun_cells` run (mimo_assets/rerun.py) alike. `context`: an asset or op
    context (instance, log, run)."""
    by_dataset: dict[str, list[tuple[str, str]]] = {}
    for dataset, instance_id, config_name in map(split_key, keys):
        by_dataset.setdefault(dataset, []).append((instance_id, config_name))
    configs = _configs({c for pairs in by_dataset.values() for _, c in pairs}, context, model_endpoint, sandbox_backend)
    run_dir = output_store.run_dir(context.run.run_id)
    inputs = upstream(context.instance)
    for dataset, pairs in sorted(by_dataset.items()):  # one folder per dataset: ids may repeat across them
        output = run_dir if len(by_dataset) == 1 else run_dir / dataset
        path, tasks = _tasks(dataset, {i for i, _ in pairs}, output_store)
        request = RunRequest(
            dataset=str(path),
            selection=Selection(partitions=pairs),
            configs=[c.path for c in configs.values()],
            num_rollouts=config.num_rollouts,
            output_dir=output,
            run_id=context.run.run_id,
        )
        rows, named = list(tasks.values()), list(configs.values())
        if graded_only:
            jobs = _regrade_jobs(context, dataset, request, rows, named)
        else:
            jobs = plan_run(request, rows, named).jobs
        context.log.info(
            f"{dataset}: {len(jobs)} rollouts over {len(pairs)} partitions, {config.workers} at a time -> {output}"
        )
        yield from materializations(
            context.instance,
            dataset,
            run_in_thread(jobs, config.workers, batch_runner.ray_options()),
            [j.key for j in jobs],
            output,
            inputs,
            run_tags(),
            graded_only=graded_only,
            log=context.log,
            always_judge=always_judge,
            dagster_planned=dagster_planned,
        )


@multi_asset(
    specs=[
        AssetSpec(
            ROLLOUTS,
            deps=[CONVERTED_JSONL, CONFIG_FILES],
            group_name=ROLLOUTS_GROUP,
            skippable=True,
            code_version=CODE_VERSION,
            partitions_def=rollout_partitions,
            kinds={"python"},
            description="K agent rollouts per planned instance and config: trajectories, exit statuses, usage.",
        ),
        AssetSpec(
            JUDGE_SCORES,
            deps=[ROLLOUTS],
            group_name=ROLLOUTS_GROUP,
            code_version=CODE_VERSION,
            skippable=True,
            partitions_def=rollout_partitions,
            description="Rubric scores from the in-environment judge agent (empty without a judge).",
        ),
        AssetSpec(
            GRADED_RESULTS,
            deps=[ROLLOUTS, JUDGE_SCORES],
            group_name=ROLLOUTS_GROUP,
            skippable=True,
            code_version=CODE_VERSION,
            partitions_def=rollout_partitions,
            description="The verifier's reward per rollout; a recalc rematerializes only this.",
        ),
    ],
    name="rollouts",
    can_subset=True,
    backfill_policy=backfill_policy(),
)
def rollouts(
    context: AssetExecutionContext,
    config: RolloutsConfig,
    output_store: OutputStore,
    model_endpoint: ModelEndpoint,
    sandbox_backend: SandboxBackend,
    batch_runner: BatchRunner,
) -> Iterator[AssetMaterialization]:
    graded_only = set(context.selected_asset_keys) == {GRADED_RESULTS}
    yield from emit_all(
        context,
        cell_events(
            context,
            context.partition_keys,
            config,
            output_store,
            model_endpoint,
            sandbox_backend,
            batch_runner,
            graded_only=graded_only,
            always_judge=JUDGE_SCORES in context.selected_asset_keys,
            dagster_planned=tuple(sorted(context.selected_asset_keys, key=str)),
        ),
    )
