"""Log a step's asset events in batches, through Dagster's own batch path.

A step that records hundreds of partitions would otherwise store one event per call (a connection, an
INSERT and two commits each). Here records are grouped by what arrived while the previous batch was
stored, and each batch's events are logged with Dagster's batch metadata, so the instance hands the
whole batch to the event log's `store_event_batch` (one transaction on dagster-postgres and on
mimo_assets.instance.storage SQLite). The events themselves are exactly the ones the step would yield.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from dagster import AssetMaterialization, AssetObservation, DagsterEvent, DagsterEventType, OpExecutionContext

from mimo_assets.dagster_private import (
    AssetFailedToMaterializeData,
    AssetMaterializationFailure,
    AssetMaterializationPlannedData,
    DagsterEventBatchMetadata,
    enable_event_batches,
    generate_event_batch_id,
    step_context,
)
from mimo_assets.eventlog.events import Kept
from mimo_assets.eventlog.pointers import Event, fill_pointers, split_ready

T = TypeVar("T")
MAX_BATCH = 500
IDLE_FLUSH_S = 1.0
LINGER_S = 0.5
_END = object()


def batches(
    source: Iterable[T], max_size: int = MAX_BATCH, idle_s: float = IDLE_FLUSH_S, linger_s: float = LINGER_S
) -> Iterator[list[T]]:
    """Items of `source` (a blocking iterator, e.g. rollouts finishing) in lists: each list holds the
    first item that arrives plus whatever else arrives within `linger_s`, up to `max_size`. A batch's
    storage costs far more than its events (commits, each asset's latest-event row, the pointer
    lookup): a 1,000-partition run at 8 workers recorded in ~220 batches cost the recording child
    ~8 s of CPU, in ~50 batches (0.5 s) ~4 s. The end of the source ends the wait at once, so the last
    record is not delayed; an empty list after `idle_s` seconds with nothing new lets a consumer store
    what it held back (StagedLog)."""
    pending: queue.SimpleQueue[Any] = queue.SimpleQueue()
    failure: list[BaseException] = []

    def pump() -> None:
        try:
            for item in source:
                pending.put(item)
        except BaseException as e:  # re-raised in the consumer
            failure.append(e)
        finally:
            pending.put(_END)

    threading.Thread(target=pump, name="mimo-batches", daemon=True).start()
    done = False
    while not done:
        try:
            item = pending.get(timeout=idle_s)
        except queue.Empty:
            yield []
            continue
        if item is _END:
            break
        batch = [item]
        deadline = time.monotonic() + linger_s
        while len(batch) < max_size:
            try:
                nxt = pending.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if nxt is _END:
                done = True
                break
            batch.append(nxt)
        yield batch
    if failure:
        raise failure[0]


class StagedLog:
    """Logs a step's batches of events. An event that points at another event of its partition in the
    same batch (a graded result at its rollouts) is held back to the next store, with the storage id of
    that event filled in (eventlog/pointers.py): each pointer holds a real id, and a batch still costs one
    storage transaction. What is held is stored by the next batch, by an idle tick of `batches` (≤ 1 s
    later) or by `flush`."""

    def __init__(self, context: OpExecutionContext | Any):
        self.context = context
        self.held: list[Event] = []
        self.stored: list[Event] = []

    def log(self, events: list[Event]) -> None:
        if not events and not self.held:
            return
        held = fill_pointers(self.context.instance, self.stored, self.held) if self.held else []
        ready, self.held = split_ready([*held, *events])
        _store(self.context, ready)
        self.stored = ready

    def flush(self) -> None:
        while self.held:
            self.log([])


def _store(context: OpExecutionContext | Any, events: list[Event]) -> None:
    """Log one batch of materializations (and materialization failures) in the running step."""
    if not events:
        return
    enable_event_batches(MAX_BATCH * 3)
    step = step_context(context)
    materializations = [e for e in events if isinstance(e, AssetMaterialization)]
    failures = [e for e in events if isinstance(e, AssetMaterializationFailure)]
    observations = [e for e in events if isinstance(e, AssetObservation)]
    for event, meta in zip(materializations, _batch(len(materializations)), strict=True):
        DagsterEvent.asset_materialization(step, event, meta)
    # Dagster's partition status counts a partition failed when a failed run planned it and did not
    # materialize it: say it was planned (the CLI door's run plans nothing up front), then failed. One
    # batch per event type (dagster-postgres batches one type at a time), the failures after their plans.
    for failure, meta in zip(failures, _batch(len(failures)), strict=True):
        planned = AssetMaterializationPlannedData(failure.asset_key, partition=failure.partition)
        DagsterEvent.from_step(DagsterEventType.ASSET_MATERIALIZATION_PLANNED, step, planned, batch_metadata=meta)
    for failure in failures:  # dropped by the SQLite and PostgreSQL event logs (events.partition_failures)
        DagsterEvent.from_step(
            DagsterEventType.ASSET_FAILED_TO_MATERIALIZE,
            step,
            AssetFailedToMaterializeData(failure),
            message=f"{failure.asset_key.to_user_string()} {failure.partition}: {failure.description}",
        )
    # what the partition's page shows of a failure: the event log keeps observations (events.partition_failures)
    for observation, meta in zip(observations, _batch(len(observations)), strict=True):
        DagsterEvent.asset_observation(step, observation, meta)


def _batch(size: int) -> list[DagsterEventBatchMetadata]:
    """Batch metadata for `size` events stored together (the last one ends the batch)."""
    batch_id = generate_event_batch_id()
    return [DagsterEventBatchMetadata(batch_id, i == size - 1) for i in range(size)]


def emit_all(context: Any, items: Iterable[AssetMaterialization | list[Any]]) -> Iterator[AssetMaterialization]:
    """Yield single events (the step logs them), log batches; then fail the step if any partition hit an
    infrastructure error, so such a run is never green (its finished partitions stay recorded, and a
    partition that kept an earlier result (`Kept`) stays materialized)."""
    failed: dict[str, str] = {}
    kept: dict[str, str] = {}
    staged = StagedLog(context)
    try:
        for item in items:
            if isinstance(item, list):
                kept.update({k.partition: k.description for k in item if isinstance(k, Kept)})
                events = [e for e in item if not isinstance(e, Kept)]
                staged.log(events)
                failed.update(
                    {str(f.partition): str(f.description) for f in events if isinstance(f, AssetMaterializationFailure)}
                )
            else:
                yield item
    finally:  # what finished is recorded even when the rollouts stopped with an error
        staged.flush()
    if failed or kept:
        from dagster import Failure

        parts = []
        if failed:
            parts.append(
                f"{len(failed)} partition(s) failed: " + "; ".join(f"{p}: {d}" for p, d in list(failed.items())[:5])
            )
        if kept:
            parts.append(
                f"{len(kept)} partition(s) kept their earlier result: "
                + "; ".join(f"{p}: {d}" for p, d in list(kept.items())[:5])
            )
        raise Failure(description=f"{INFRA_FAILURE_PREFIX} " + " | ".join(parts), allow_retries=False)


INFRA_FAILURE_PREFIX = "infrastructure errors:"
