"""The step's work when a CLI run is recorded (an ingested registry entry, or the live recorder's feed):
register the run's inputs and log each partition's materializations from its finished records."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dagster import AssetMaterialization, DagsterEventType, DagsterInstance, RunsFilter

from mimo_assets.asset_keys import GRADED_RESULTS, ROLLOUTS
from mimo_assets.cli_recording.feed import Feed, RecordingHeader
from mimo_assets.eventlog.events import Kept, run_tags
from mimo_assets.eventlog.pointers import Event
from mimo_assets.eventlog.stream import materializations
from mimo_assets.input_versions import converted_text
from mimo_assets.inputs import config_events, dataset_events, recorded_dataset_events, upstream
from mimo_assets.partitions import dataset_name, partition_key, register_planned
from mimo_core.records.results import ResultRecord, ResultsStore

# The start of the failure a recorded run of a killed CLI ends with: recorded, and red.
KILLED_PREFIX = "the mimoagent process ended before its run did"


def unrecorded(instance: DagsterInstance, dataset: str, feed: Feed, pending: set[str]) -> list[ResultRecord]:
    """Finished rollouts in the output folder whose partition has no `rollouts` materialization at all and
    no registry entry of their own (`pending`: run ids still to be recorded): their run ran with
    MIMOAGENT_DAGSTER=0, or lost its record. Recorded by this run (for this run's rows and configs, whose
    partitions it registers), so nothing finished is missing in Dagster."""
    header = feed.header
    planned = set(header.planned)
    rows, configs = set(header.instance_ids), set(header.config_names)
    done = instance.get_materialized_partitions(ROLLOUTS)
    return [
        rec
        for rec in ResultsStore(header.request.output_dir).finished().values()
        if rec.key not in planned
        and rec.instance_id in rows
        and rec.config_name in configs
        and rec.run_id not in pending
        and str(partition_key(dataset, rec.instance_id, rec.config_name)) not in done
    ]


def recorded_before(instance: DagsterInstance, run_id: str, this_run: str) -> set[str]:
    """Partitions earlier Dagster runs of the same CLI run already recorded (a recording that died half-way
    and is done again must not record them twice)."""
    found: set[str] = set()
    for run in instance.get_runs(RunsFilter(tags={"mimoagent/source": "cli", "mimoagent/run_id": run_id})):
        if run.run_id == this_run:
            continue
        conn = instance.get_records_for_run(run.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION)
        found |= {
            str(r.event_log_entry.asset_materialization.partition)
            for r in conn.records
            if r.event_log_entry.asset_materialization is not None
            and r.event_log_entry.asset_materialization.asset_key == GRADED_RESULTS
        }
    return found


def _dataset_events(
    instance: DagsterInstance, header: RecordingHeader, datasets_dir: Path, tags: dict[str, str], log: Any
) -> list[AssetMaterialization]:
    """The dataset's materializations from the run's record of it; its rows are loaded again only when its
    converted file was never written (a dataset version Dagster has not seen) or the entry predates the
    record."""
    req = header.request
    try:
        if header.dataset is not None:
            events = recorded_dataset_events(instance, header.dataset, req.dataset, req.split, datasets_dir, tags)
            if events is not None:
                return events
        from mimo_core.datasets.loader import load_tasks

        tasks = load_tasks(req.dataset, req.split)
        if header.dataset is not None and converted_text(tasks)[1] != header.dataset.version:
            log.warning(f"dataset {req.dataset!r} changed since the CLI run; recorded as it is now")
        return dataset_events(instance, tasks, req.dataset, req.split, datasets_dir, tags)
    except Exception as e:  # the rollouts are the record that matters; say why the dataset is absent
        log.warning(f"dataset {req.dataset!r} not recorded: {type(e).__name__}: {e}")
        return []


def record_cli_run(
    instance: DagsterInstance,
    feed: Feed,
    datasets_dir: Path,
    log: Any,
    dagster_run_id: str,
    pending: set[str] | None = None,
) -> Iterator[AssetMaterialization | list[Event | Kept]]:
    """The CLI ran the rollouts; register its inputs (as its entry records them) and log each partition."""
    header = feed.header
    req = header.request
    tags = run_tags({"mimoagent/source": "cli"})
    yield from _dataset_events(instance, header, datasets_dir, tags, log)
    dataset = dataset_name(req.dataset, req.split)
    yield from config_events(instance, req.configs, tags, files=header.config_files)  # (None: read now)
    earlier = [] if req.recalc is not None else unrecorded(instance, dataset, feed, pending or set())
    # the planned cells (and those of earlier rollouts recorded now): "missing" until done
    register_planned(
        instance, dataset, [*((i, c) for i, c, _ in header.planned), *((r.instance_id, r.config_name) for r in earlier)]
    )
    if earlier:
        log.info(f"recording {len(earlier)} finished rollout(s) of an earlier run that Dagster never recorded")
    before = recorded_before(instance, req.run_id, dagster_run_id)
    if before:
        log.info(f"{len(before)} partition(s) of this CLI run were recorded by an earlier recording: not again")
    records = (
        r
        for r in itertools.chain(earlier, feed)
        if str(partition_key(dataset, r.instance_id, r.config_name)) not in before
    )
    yield from materializations(
        instance,
        dataset,
        records,
        [*header.planned, *(r.key for r in earlier)],
        req.output_dir,
        upstream(instance),
        tags,
        graded_only=req.recalc is not None,
        log=log,
    )
