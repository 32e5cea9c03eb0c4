"""Every use of Dagster's private API (`dagster._...`), in one place, so a Dagster upgrade touches this file.

Each entry says why the public API does not serve. The pinned set is dagster 1.13.27 (pyproject.toml);
tests/dagster/test_private_api.py fails when another module of the code location imports `dagster._`.
Names are loaded on first use (`__getattr__`): `mimoagent-dagster` reads `DAEMON_MODULE` without paying
for `import dagster`, and a process that never opens a SQLite home never imports its storage (~0.4 s).
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dagster._core.definitions.events import (
        AssetMaterializationFailure,
        AssetMaterializationFailureReason,
        AssetMaterializationFailureType,
    )
    from dagster._core.definitions.metadata import RawMetadataValue
    from dagster._core.events import (
        AssetFailedToMaterializeData,
        AssetMaterializationPlannedData,
        DagsterEventBatchMetadata,
        generate_event_batch_id,
    )
    from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
    from dagster._core.storage.event_log.sqlite.consolidated_sqlite_event_log import (
        ConsolidatedSqliteEventLogStorage,
    )
    from dagster._serdes import ConfigurableClassData

_NAMES: dict[str, str] = {
    # A partition whose rollouts hit an infrastructure error is reported *failed* (the UI's partition
    # view counts it failed, not missing). Dagster logs this event itself when a whole asset raises, but
    # the public API has no event a step can log for "this one partition of many failed".
    "AssetMaterializationFailure": "dagster._core.definitions.events",
    "AssetMaterializationFailureReason": "dagster._core.definitions.events",
    "AssetMaterializationFailureType": "dagster._core.definitions.events",
    "AssetFailedToMaterializeData": "dagster._core.events",
    # ... and for the partition status to count it failed, the run must have planned it first: the public
    # API plans partitions only for assets a run selects up front, which a CLI run's record cannot.
    "AssetMaterializationPlannedData": "dagster._core.events",
    # A batch of events in one storage transaction: the public `context.log_event` stores one event per
    # call (a connection, an INSERT and two commits each); Dagster's batch path is reached only through
    # events built with batch metadata.
    "DagsterEventBatchMetadata": "dagster._core.events",
    "generate_event_batch_id": "dagster._core.events",
    # The batched SQLite event log (instance/storage.py) subclasses Dagster's consolidated SQLite storage:
    # no public base class stores a batch of events in one transaction or keeps one engine per process.
    "ConsolidatedSqliteEventLogStorage": "dagster._core.storage.event_log.sqlite.consolidated_sqlite_event_log",
    "SqlEventLogStorageTable": "dagster._core.storage.event_log.schema",
    # The argument type of a configurable storage class's constructor (how `dagster.yaml` builds one).
    "ConfigurableClassData": "dagster._serdes",
    # The type of a plain metadata value (a number, text, a path, a MetadataValue...): what `metadata=`
    # takes; the public API has no name for it (type annotations only).
    "RawMetadataValue": "dagster._core.definitions.metadata",
}

# `mimoagent-dagster daemon` runs the daemon as `python -m <this>`: the `dagster-daemon` console script
# is looked up on PATH, which fails from a venv that is not activated; its module is private.
DAEMON_MODULE = "dagster._daemon"

# Dagster buffers events that carry batch metadata only while this variable is > 0 (read at every
# event): no public setting turns the batch path on.
_EVENT_BATCH_SIZE_ENV = "DAGSTER_EVENT_BATCH_SIZE"


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        value = getattr(importlib.import_module(_NAMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def enable_event_batches(size: int) -> None:
    """Let Dagster hand batches of up to `size` events to the event log's `store_event_batch`."""
    if int(os.environ.get(_EVENT_BATCH_SIZE_ENV, "0")) < size:
        os.environ[_EVENT_BATCH_SIZE_ENV] = str(size)


def step_context(context: Any) -> Any:
    """The step context behind an op or asset context: Dagster's event constructors take it, and the
    public contexts expose it only as a private attribute."""
    op_context = getattr(context, "op_execution_context", context)
    return op_context._step_execution_context


@dataclass(frozen=True)
class AssetEventSummary:
    """What the analytics read of a stored asset event: ids, partition, tags and plain metadata values."""

    storage_id: int
    run_id: str
    timestamp: float
    partition: str | None
    tags: dict[str, str]
    metadata: dict[str, Any]


_PAGE = 20_000


def asset_event_summaries(
    instance: Any,
    asset_key: Any,
    observations: bool = False,
    run_ids: list[str] | None = None,
    after_storage_id: int | None = None,
) -> Iterator[AssetEventSummary]:
    """Every stored materialization (observation with `observations`) of `asset_key`, oldest first, as
    summaries; with `run_ids`, only those of these Dagster runs. The analytics read each graded event once
    per refresh, and the public `fetch_materializations` deserializes every event in full (Dagster's serdes:
    ~0.4 ms a graded event, 40 s of a 100,000-rollout refresh); this reads the event log's rows and parses
    their JSON with the standard library (~30 µs). An event log that is not Dagster's SQL storage, or a row
    of a shape this code does not know, goes through the public API's deserializer, so nothing is lost."""
    from dagster import AssetRecordsFilter, DagsterEventType, EventLogEntry

    kind = DagsterEventType.ASSET_OBSERVATION if observations else DagsterEventType.ASSET_MATERIALIZATION
    storage = instance.event_log_storage
    if not hasattr(storage, "index_connection"):  # not a SQL event log: the public path
        yield from _public_summaries(instance, AssetRecordsFilter(asset_key=asset_key), observations, run_ids)
        return
    import sqlalchemy as db
    from dagster._core.storage.event_log.schema import SqlEventLogStorageTable as T
    from dagster_shared.serdes import deserialize_value

    last = after_storage_id or 0
    while True:
        query = (
            db.select(T.c.id, T.c.run_id, T.c.timestamp, T.c.partition, T.c.event)
            .where(T.c.asset_key == asset_key.to_string(), T.c.dagster_event_type == kind.value, T.c.id > last)
            .order_by(T.c.id.asc())
            .limit(_PAGE)
        )
        if run_ids is not None:
            query = query.where(T.c.run_id.in_(run_ids))
        with storage.index_connection() as conn:
            rows = conn.execute(query).fetchall()
        for storage_id, run_id, timestamp, partition, body in rows:
            summary = _summary_from_json(storage_id, run_id, timestamp, partition, body)
            if summary is None:
                entry = deserialize_value(body)
                if not isinstance(entry, EventLogEntry):
                    raise ValueError(f"event log row {storage_id} is not an event log entry")
                event = entry.asset_materialization or entry.asset_observation
                if event is None:
                    raise ValueError(f"event log row {storage_id} holds no asset event")
                summary = AssetEventSummary(
                    storage_id,
                    run_id,
                    entry.timestamp,
                    partition,
                    dict(event.tags or {}),
                    {k: v.value for k, v in event.metadata.items()},
                )
            yield summary
        if len(rows) < _PAGE:
            return
        last = rows[-1][0]


def asset_event_checkpoint(instance: Any, asset_key: Any, observations: bool, upto: int) -> tuple[int, str] | None:
    """What an incremental reader of `asset_event_summaries` checks before reading only the events after
    `upto`: how many of the asset's materializations (observations) have a storage id <= `upto`, and the
    run of the one at `upto`. A wiped asset or a deleted run (fewer events), an event stored late below
    `upto` (PostgreSQL hands out ids before commit: one more), or a reused id (another run) change it;
    then the reader reads them all again. None when the event log is not Dagster's SQL storage (no
    public query counts events by id): always read them all."""
    from dagster import DagsterEventType

    storage = instance.event_log_storage
    if not hasattr(storage, "index_connection"):
        return None
    import sqlalchemy as db
    from dagster._core.storage.event_log.schema import SqlEventLogStorageTable as T

    kind = DagsterEventType.ASSET_OBSERVATION if observations else DagsterEventType.ASSET_MATERIALIZATION
    where = (T.c.asset_key == asset_key.to_string(), T.c.dagster_event_type == kind.value)
    with storage.index_connection() as conn:
        count = conn.execute(db.select(db.func.count()).select_from(T).where(*where, T.c.id <= upto)).scalar()
        run = conn.execute(db.select(T.c.run_id).where(*where, T.c.id == upto)).scalar()
    return int(count or 0), str(run or "")


def warm_partition_status(instance: Any, asset_keys: list[Any], partitions_def: Any) -> list[Any]:
    """Bring the partition status the UI shows (Dagster's asset status cache: materialized, failed, in
    progress) up to date for each asset whose events are newer than its cache, as the webserver would on
    the next view of the asset; the keys it updated. At 100,000 dynamic partitions building it takes ~4 s
    of CPU an asset (more when new partitions were registered: the cache is keyed by the partition set),
    which the first view after a run otherwise waits for (13 s to the partitions page's counts, 4-6 s
    once built). No public call updates the cache: the webserver does, when the page asks."""
    from dagster._core.storage.partition_status_cache import (
        get_and_update_asset_status_cache_value,
        get_last_planned_storage_id,
    )

    if not instance.event_log_storage.can_write_asset_status_cache():
        return []
    warmed = []
    for record in instance.get_asset_records(asset_keys):
        entry = record.asset_entry
        planned = get_last_planned_storage_id(instance, entry.asset_key, record) or 0
        latest = max(entry.last_materialization_storage_id or 0, planned)
        cached = entry.cached_status
        if latest and (cached is None or cached.latest_storage_id < latest):
            get_and_update_asset_status_cache_value(instance, entry.asset_key, partitions_def)
            warmed.append(entry.asset_key)
    return warmed


def _summary_from_json(
    storage_id: int, run_id: str, timestamp: Any, partition: str | None, body: str
) -> AssetEventSummary | None:
    try:
        entry = json.loads(body)
        data = entry["dagster_event"]["event_specific_data"]
        event = data.get("materialization") or data.get("asset_observation")
        if event is None or "metadata_entries" not in event:
            return None
        metadata: dict[str, Any] = {}
        for item in event["metadata_entries"]:
            values = {k: v for k, v in item["entry_data"].items() if k != "__class__"}
            if len(values) > 1:
                return None
            metadata[item["label"]] = next(iter(values.values()), None)
        return AssetEventSummary(
            storage_id,
            run_id,
            float(entry["timestamp"]),
            event.get("partition", partition),
            dict(event.get("tags") or {}),
            metadata,
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _public_summaries(
    instance: Any, records_filter: Any, observations: bool, run_ids: list[str] | None
) -> Iterator[AssetEventSummary]:
    fetch = instance.fetch_observations if observations else instance.fetch_materializations
    cursor = None
    while True:
        result = fetch(records_filter, limit=_PAGE, cursor=cursor, ascending=True)
        for rec in result.records:
            event = rec.asset_observation if observations else rec.asset_materialization
            if event is None or (run_ids is not None and rec.run_id not in run_ids):
                continue
            yield AssetEventSummary(
                rec.storage_id,
                rec.run_id,
                rec.timestamp,
                event.partition,
                dict(event.tags or {}),
                {k: v.value for k, v in event.metadata.items()},
            )
        if not result.has_more:
            return
        cursor = result.cursor


__all__ = [
    "DAEMON_MODULE",
    "AssetEventSummary",
    "AssetFailedToMaterializeData",
    "AssetMaterializationFailure",
    "AssetMaterializationFailureReason",
    "AssetMaterializationFailureType",
    "AssetMaterializationPlannedData",
    "ConfigurableClassData",
    "ConsolidatedSqliteEventLogStorage",
    "DagsterEventBatchMetadata",
    "RawMetadataValue",
    "SqlEventLogStorageTable",
    "asset_event_checkpoint",
    "asset_event_summaries",
    "enable_event_batches",
    "generate_event_batch_id",
    "step_context",
    "warm_partition_status",
]
