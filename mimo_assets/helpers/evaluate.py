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
from resources import ModelEndpoint, OutputStore, SandboxBackend


def execute(
    instance: DagsterInstance, cfg: Any, run_id: str, store: OutputStore, model: ModelEndpoint,
    sandbox: SandboxBackend, log: Any, tags: dict[str, str],
) -> Iterator[AssetMaterialization | list[Event]]:
    """Plan like the CLI (A/B assignment, skip finished unless redo_existing) and run on the core's pool."""
    from mimo_core.batch import plan_jobs
    from mimo_core.config import load_configs
    from mimo_core.datasets.loader import load_tasks, select_tasks

    source = cfg.dataset or os.environ.get("MIMOAGENT_DATASET", "")
    if not source:
        raise ValueError("evaluate: no dataset (set `dataset` in the run config or $MIMOAGENT_DATASET)")
    paths = cfg.configs or list(registered_configs(instance).values())
    if not paths:
        raise ValueError("evaluate: no config files given and none registered yet")
    tasks = load_tasks(source, cfg.split)
    yield from dataset_events(instance, tasks, source, cfg.split, store.datasets_dir(), tags)
    yield from config_events(instance, paths, tags)
    overrides = [o for o in (model.overrides(), sandbox.overrides()) if o]
    configs = load_configs(paths, overrides)
    selected = select_tasks(tasks, cfg.slice, cfg.filter)
    output = Path(cfg.output_dir).expanduser().resolve() if cfg.output_dir else store.run_dir(run_id)
    jobs = plan_jobs(selected, configs, cfg.num_rollouts, output, run_id, cfg.redo_existing, recalc=cfg.recalc)
    log.info(f"{len(jobs)} rollouts to run over {len(selected)} instances -> {output}")
    planned = [j.key for j in jobs]
    yield from materializations(
        instance, run_in_thread(jobs, cfg.workers), planned, output, upstream(instance), tags,
        graded_only=cfg.recalc is not None, log=log,
    )
