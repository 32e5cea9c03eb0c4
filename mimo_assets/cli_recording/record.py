"""Inside the recorder (a fork of it per CLI run): one in-process `evaluate` run whose step registers the
CLI run's inputs and logs each partition's materializations as its records arrive on the feed."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

from dagster import AssetMaterialization, DagsterInstance

from mimo_assets.asset_keys import ROLLOUTS
from mimo_assets.cli_recording.feed import Feed
from mimo_assets.helpers.engine import Event, materializations
from mimo_assets.helpers.events import run_tags
from mimo_assets.helpers.inputs import config_events, dataset_events, upstream
from mimo_assets.partitions import dataset_name, partition_key, register_planned
from mimo_core.results import ResultRecord, ResultsStore


def unrecorded(instance: DagsterInstance, dataset: str, feed: Feed) -> list[ResultRecord]:
    """Finished rollouts in the output folder whose partition has no `rollouts` materialization at all: their
    run was killed together with its recording, or ran with MIMOAGENT_DAGSTER=0. Recorded by this run (for
    this run's rows and configs, whose partitions it registers), so nothing finished is missing in Dagster."""
    header = feed.header
    planned = set(header.planned)
    rows, configs = set(header.instance_ids), set(header.config_names)
    done = instance.get_materialized_partitions(ROLLOUTS)
    return [rec for rec in ResultsStore(header.request.output_dir).finished().values()
            if rec.key not in planned and rec.instance_id in rows and rec.config_name in configs
            and str(partition_key(dataset, rec.instance_id, rec.config_name)) not in done]


def record_cli_run(
    instance: DagsterInstance, feed: Feed, datasets_dir: Path, log: Any,
) -> Iterator[AssetMaterialization | list[Event]]:
    """The CLI ran (and is running) the rollouts; register its inputs and log each partition."""
    from mimo_core.datasets.loader import load_tasks

    header = feed.header
    req = header.request
    tags = run_tags({"mimoagent/source": "cli"})
    try:
        tasks = load_tasks(req.dataset, req.split)
        yield from dataset_events(instance, tasks, req.dataset, req.split, datasets_dir, tags)
    except Exception as e:  # the rollouts are the record that matters; say why the dataset is absent
        log.warning(f"dataset {req.dataset!r} not recorded: {type(e).__name__}: {e}")
    dataset = dataset_name(req.dataset, req.split)
    yield from config_events(instance, req.configs, tags)
    earlier = [] if req.recalc is not None else unrecorded(instance, dataset, feed)
    # the planned cells (and those of earlier rollouts recorded now): "missing" until done
    register_planned(instance, dataset, [*((i, c) for i, c, _ in header.planned),
                                         *((r.instance_id, r.config_name) for r in earlier)])
    if earlier:
        log.info(f"recording {len(earlier)} finished rollout(s) of an earlier run that Dagster never recorded")
    yield from materializations(
        instance, dataset, itertools.chain(earlier, feed), [*header.planned, *(r.key for r in earlier)],
        req.output_dir, upstream(instance), tags, graded_only=req.recalc is not None, log=log,
    )
    if not feed.complete:
        from dagster import Failure

        raise Failure(description="the mimoagent process ended before its run did (killed?): what it finished "
                                  f"is recorded; the next run over {req.output_dir} does the rest "
                                  f"({feed.n_planned} rollouts were planned)")


def execute_feed(feed: Feed, instance: DagsterInstance) -> str | None:
    """Run the `evaluate` job in this process over a feed; an error message, or None when recorded."""
    try:
        from mimo_assets.helpers.batching import INFRA_FAILURE_PREFIX
        from mimo_assets.helpers.home import dagster_home
        from mimo_assets.jobs import evaluate_job
        from resources import BatchRunner, ModelEndpoint, OutputStore, SandboxBackend

        req = feed.header.request
        tags = {
            "mimoagent/source": "cli", "mimoagent/run_id": req.run_id,
            "mimoagent/date": date.today().isoformat(), "mimoagent/dataset": req.dataset[:200],
            "mimoagent/configs": ",".join(feed.header.config_names)[:200],
            "mimoagent/output_dir": str(req.output_dir)[:200],
        }
        if req.recalc:
            tags["mimoagent/recalc"] = req.recalc[:200]
        # The bare job with the resources its recording path takes, not the code location's
        # Definitions: those import the analytics (polars) and every asset, ~0.3 s of CPU per CLI run.
        resources = {"cli_feed": feed, "output_store": OutputStore(), "model_endpoint": ModelEndpoint(),
                     "sandbox_backend": SandboxBackend(), "batch_runner": BatchRunner()}
        result = evaluate_job.execute_in_process(
            instance=instance, tags=tags, raise_on_error=False, resources=resources,
            run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
        )
        if not result.success:
            error = result.failure_data_for_node("evaluate_op")
            message = str(error.error.message if error and error.error else "").strip()
            if INFRA_FAILURE_PREFIX in message:  # recorded; the run is red because partitions failed
                print(f"recorded as failed dagster run {result.run_id}: {message[:300]}", flush=True)
                return None
            return f"dagster run {result.run_id} failed (see it in the UI; DAGSTER_HOME={dagster_home()})"
        return None
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    finally:
        for _ in feed:  # the step may have stopped early: drain so the reader never blocks
            pass
