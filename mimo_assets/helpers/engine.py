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

from dagster import AssetMaterialization, AssetRecordsFilter, DagsterInstance

from mimo_assets.asset_keys import JUDGE_SCORES
from mimo_assets.helpers.events import PartitionGrouper, Upstream, partition_events
from mimo_assets.partitions import partition_key
from mimo_core.results import ResultRecord
from mimo_core.rollout import RolloutJob

_END = object()


def run_in_thread(jobs: list[RolloutJob], workers: int) -> Iterator[ResultRecord]:
    """Run the batch on the core's pool in a thread; yield each record as it finishes."""
    from mimo_core.batch import run_jobs

    out: queue.SimpleQueue[Any] = queue.SimpleQueue()
    failure: list[BaseException] = []

    def target() -> None:
        try:
            run_jobs(jobs, workers, on_result=out.put)
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


def _judge_input(instance: DagsterInstance, instance_id: str, config_name: str) -> tuple[int | None, str]:
    """For a regrade: the judge scores it regrades, so lineage points at the rollout that stays as it was."""
    result = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=JUDGE_SCORES, asset_partitions=[str(partition_key(instance_id, config_name))]),
        limit=1,
    )
    if not result.records:
        return None, "INITIAL"
    rec = result.records[0]
    tags = (rec.asset_materialization.tags if rec.asset_materialization else None) or {}
    return rec.storage_id, tags.get("dagster/data_version", "INITIAL")


def materializations(
    instance: DagsterInstance, records: Iterable[ResultRecord], planned: list[tuple[str, str, int]],
    output_dir: Path, upstream: Upstream, tags: dict[str, str], graded_only: bool = False,
    log: Any = None,
) -> Iterator[AssetMaterialization]:
    """Group records by partition; once a partition's K rollouts are in, yield its events.

    Infra-error rollouts are left out: they are not finished (the next run redoes them), so a partition
    with nothing else stays missing rather than being counted as materialized."""
    grouper = PartitionGrouper(planned)

    def emit(group: list[ResultRecord]) -> list[AssetMaterialization]:
        done = [r for r in group if not r.infra_error]
        if len(done) < len(group) and log is not None:
            for r in group:
                if r.infra_error:
                    log.warning(f"{r.instance_id} [{r.config_name}#{r.rollout_index}]: {r.exit_status} "
                                f"(infrastructure error, left missing): {r.error}")
        if not done:
            return []
        judge = _judge_input(instance, done[0].instance_id, done[0].config_name) if graded_only else None
        return partition_events(done, output_dir, upstream, tags, graded_only=graded_only, judge_input=judge)

    for record in records:
        group = grouper.add(record)
        if group is not None:
            yield from emit(group)
    for group in grouper.leftovers():
        yield from emit(group)
