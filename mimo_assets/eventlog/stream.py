"""Turn finished rollouts into materializations as they arrive, from whichever door ran them.

One Dagster step covers a whole batch of partitions: rollouts run concurrently on a thread pool
(`workers`) while the step logs each partition's events, so a 1,000-partition run is one run, not
1,000 (a Dagster run costs seconds to start).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from dagster import AssetKey, AssetRecordsFilter, DagsterInstance

from mimo_assets.asset_keys import JUDGE_SCORES, ROLLOUTS
from mimo_assets.cell_result import CurrentResults, latest_materialization
from mimo_assets.eventlog.batching import batches
from mimo_assets.eventlog.events import (
    Kept,
    PartitionGrouper,
    Upstream,
    kept_copies,
    partition_events,
    partition_failures,
)
from mimo_assets.eventlog.pointers import Event
from mimo_assets.partitions import partition_key
from mimo_core.records.results import ResultRecord
from mimo_core.run.job import RolloutJob

_END = object()


def run_in_thread(jobs: list[RolloutJob], workers: int, ray: Any = None) -> Iterator[ResultRecord]:
    """Run the batch on the core's pool (or, given RayOptions, on a Ray cluster) in a thread; yield each
    record as it finishes."""
    from mimo_core.run.batch import run_jobs

    out: queue.SimpleQueue[Any] = queue.SimpleQueue()
    failure: list[BaseException] = []

    def target() -> None:
        try:
            run_jobs(jobs, workers, on_result=out.put, ray=ray)
        except BaseException as e:  # surfaced in the step, not lost in a thread
            failure.append(e)
        finally:
            out.put(_END)

    thread = threading.Thread(target=target, name="mimo-rollouts", daemon=True)
    thread.start()
    while (item := out.get()) is not _END:
        yield item
    thread.join()
    if failure:
        raise failure[0]


def _regraded_input(
    instance: DagsterInstance,
    dataset: str,
    instance_id: str,
    config_name: str,
) -> tuple[AssetKey, int | None, str]:
    """For a regrade: the event it regrades (the judge scores, or the rollouts when no judge ran), so
    lineage points at the rollout that stays as it was."""
    pk = str(partition_key(dataset, instance_id, config_name))
    for key in (JUDGE_SCORES, ROLLOUTS):
        result = instance.fetch_materializations(AssetRecordsFilter(asset_key=key, asset_partitions=[pk]), limit=1)
        if result.records:
            rec = result.records[0]
            tags = (rec.asset_materialization.tags if rec.asset_materialization else None) or {}
            return key, rec.storage_id, tags.get("dagster/data_version", "INITIAL")
    return ROLLOUTS, None, "INITIAL"


def materializations(
    instance: DagsterInstance,
    dataset: str,
    records: Iterable[ResultRecord],
    planned: list[tuple[str, str, int]],
    output_dir: Path,
    upstream: Upstream,
    tags: dict[str, str],
    graded_only: bool = False,
    log: Any = None,
    always_judge: bool = False,
    dagster_planned: tuple[AssetKey, ...] = (),
) -> Iterator[list[Event | Kept]]:
    """Group records by partition (of `dataset`, by its name in partition keys); once a partition's K
    rollouts are in, build its events. Yields one
    list per batch of records that arrived together (logged as one storage batch by the step).

    A partition with an infrastructure error is not finished and is never a 0 score: the next run redoes
    it. If it has no result yet, it gets failure events (the UI shows it failed, the step then fails the
    run); if it keeps an earlier graded result (mimo_assets.cell_result), that result stands: `Kept`,
    and, for the assets Dagster planned for this run (`dagster_planned`: a backfill's), its latest events
    logged again so the failed run does not count it failed."""
    grouper = PartitionGrouper(planned)
    current = CurrentResults(instance, live=output_dir)
    notes: list[str] = []  # one warning per batch: each log line is an event stored on its own

    def infra(group: list[ResultRecord]) -> list[Event | Kept]:
        first = group[0]
        pk = str(partition_key(dataset, first.instance_id, first.config_name))
        bad = [r for r in group if r.infra_error]
        why = "; ".join(f"#{r.rollout_index} {r.exit_status}: {(r.error or '')[:200]}" for r in bad)
        earlier = current.of(pk, first.instance_id, first.config_name)
        if log is not None:
            outcome = (
                f"keeps its result of run {earlier.materialization.metadata['run_id'].value}"
                if earlier
                else "partition failed"
            )
            notes.extend(
                f"{r.instance_id} [{r.config_name}#{r.rollout_index}]: {r.exit_status} "
                f"(infrastructure error, {outcome}): {r.error}"
                for r in bad
            )
        if earlier is None:
            return list(partition_failures(dataset, group, tags, graded_only=graded_only, run_dir=output_dir))
        latest = [m for key in dagster_planned if (m := latest_materialization(instance, key, pk)) is not None]
        return [
            *kept_copies(latest, f"run {first.run_id}: infrastructure error: {why}"),
            Kept(
                pk,
                f"infrastructure error ({why}); kept the result of run "
                f"{earlier.materialization.metadata['run_id'].value}",
            ),
        ]

    def emit(group: list[ResultRecord]) -> list[Event | Kept]:
        if any(r.infra_error for r in group):
            return infra(group)
        first = group[0]
        regraded = _regraded_input(instance, dataset, first.instance_id, first.config_name) if graded_only else None
        return list(
            partition_events(
                dataset,
                group,
                output_dir,
                upstream,
                tags,
                graded_only=graded_only,
                regraded=regraded,
                always_judge=always_judge,
            )
        )

    def warn() -> None:
        if notes and log is not None:
            log.warning(f"{len(notes)} rollout(s) hit an infrastructure error:\n" + "\n".join(notes))
        notes.clear()

    def emit_groups(groups: list[list[ResultRecord]]) -> list[Event | Kept]:
        failed = [g[0] for g in groups if any(r.infra_error for r in g)]
        if failed:  # whether each has an earlier result: one query for the batch, not one per partition
            current.prefetch(str(partition_key(dataset, r.instance_id, r.config_name)) for r in failed)
        events = [e for group in groups for e in emit(group)]
        warn()
        return events

    for batch in batches(records):
        yield emit_groups([g for record in batch if (g := grouper.add(record)) is not None])
    yield emit_groups(grouper.leftovers())
