"""What an `evaluate` run does when it runs the rollouts itself (launchpad, schedule): plan like the
CLI, run on the core's pool, log each partition's materializations as it finishes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dagster import AssetMaterialization, DagsterInstance

from mimo_assets.helpers.engine import Event, materializations, run_in_thread
from mimo_assets.helpers.inputs import config_events, dataset_events, registered_configs, upstream
from mimo_assets.partitions import dataset_name, register_planned
from resources import BatchRunner, ModelEndpoint, OutputStore, SandboxBackend


def execute(
    instance: DagsterInstance, cfg: Any, run_id: str, store: OutputStore, model: ModelEndpoint,
    sandbox: SandboxBackend, log: Any, tags: dict[str, str], runner: BatchRunner | None = None,
) -> Iterator[AssetMaterialization | list[Event]]:
    """Plan with the CLI's planner (A/B assignment, skip finished unless redo_existing) and run on the
    core's pool. `cfg` is the job's EvaluateConfig."""
    from mimo_core.datasets.loader import load_tasks
    from mimo_core.plan import plan_run

    request = cfg.to_request(
        dataset=cfg.dataset or os.environ.get("MIMOAGENT_DATASET", ""),
        configs=cfg.configs or list(registered_configs(instance).values()),
        overrides=[o for o in (model.overrides(), sandbox.overrides()) if o],
        output_dir=Path(cfg.output_dir).expanduser().resolve() if cfg.output_dir else store.run_dir(run_id),
        run_id=run_id,
    )
    if not request.dataset:
        raise ValueError("evaluate: no dataset (set `dataset` in the run config or $MIMOAGENT_DATASET)")
    if not request.configs:
        raise ValueError("evaluate: no config files given and none registered yet")
    tasks = load_tasks(request.dataset, request.split)
    yield from dataset_events(instance, tasks, request.dataset, request.split, store.datasets_dir(), tags)
    yield from config_events(instance, request.configs, tags)
    plan = plan_run(request, tasks)
    dataset = dataset_name(request.dataset, request.split)
    register_planned(instance, dataset, [(i, c) for i, c, _ in (j.key for j in plan.jobs)])  # "missing" until done
    log.info(f"{len(plan.jobs)} rollouts to run over {len(plan.tasks)} instances -> {request.output_dir}")
    records = run_in_thread(plan.jobs, cfg.workers, runner.ray_options() if runner else None)
    yield from materializations(
        instance, dataset, records, [j.key for j in plan.jobs], request.output_dir,
        upstream(instance), tags, graded_only=request.recalc is not None, log=log,
    )
