"""What an `evaluate` run does, for both doors: execute rollouts itself, or record a CLI run's."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

from dagster import AssetMaterialization, Config, DagsterInstance
from pydantic import Field

from mimo_assets.cli_recording.feed import Feed
from mimo_assets.engine import materializations, run_in_thread
from mimo_assets.inputs import config_events, dataset_events, registered_configs, upstream
from resources import ModelEndpoint, OutputStore, SandboxBackend


class EvaluateConfig(Config):
    """A dataset × config set, like a `mimoagent` command line (launchpad, schedules)."""

    dataset: str = Field(default="", description="JSONL/parquet/Harbor folder/HF name; default $MIMOAGENT_DATASET")
    split: str | None = None
    slice: str | None = None
    filter: str | None = None
    configs: list[str] = Field(default_factory=list, description="config files; default: every registered one")
    num_rollouts: int = 1
    workers: int = 4
    redo_existing: bool = False
    recalc: str | None = None
    output_dir: str = Field(default="", description="default: <output root>/runs/<run name>")
    feed: str = Field(default="", description="internal: set by the CLI observer to record its run")


def run_tags(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {"mimoagent/date": date.today().isoformat(), **(extra or {})}


def record_cli_run(
    instance: DagsterInstance, feed: Feed, datasets_dir: Path, log: Any,
) -> Iterator[AssetMaterialization]:
    """The CLI ran (and is running) the rollouts; register its inputs and log each partition."""
    from mimo_core.datasets.loader import load_tasks

    req = feed.request
    tags = run_tags({"mimoagent/source": "cli"})
    try:
        tasks = load_tasks(req["dataset"], req.get("split"))
        yield from dataset_events(instance, tasks, req["dataset"], req.get("split"), datasets_dir, tags)
    except Exception as e:  # the rollouts are the record that matters; say why the dataset is absent
        log.warning(f"dataset {req['dataset']!r} not recorded: {type(e).__name__}: {e}")
        from mimo_assets.partitions import INSTANCE_DIM, register

        register(instance, INSTANCE_DIM, req.get("instance_ids") or [])
    yield from config_events(instance, req["config_paths"], tags)
    yield from materializations(
        instance, feed, feed.planned, Path(req["output_dir"]), upstream(instance), tags,
        graded_only=req.get("recalc") is not None, log=log,
    )


def execute(
    instance: DagsterInstance, cfg: EvaluateConfig, run_id: str, store: OutputStore, model: ModelEndpoint,
    sandbox: SandboxBackend, log: Any, tags: dict[str, str],
) -> Iterator[AssetMaterialization]:
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
