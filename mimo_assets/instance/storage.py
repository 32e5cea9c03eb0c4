"""The SQLite event log a new mimoagent home uses: Dagster's consolidated SQLite storage with one
database engine per process and real batch writes.

Dagster's stock SQLite storage builds a new SQLAlchemy engine and connection for every statement and
stores a batch one event at a time: recording a CLI run cost ~22 ms of CPU per materialization, four
connections and two commits each (measured with cProfile: 83 % of the recording child's CPU). Here one engine
(its pool of connections) lives as long as the storage, and `store_event_batch` writes a batch of
materializations, observations and "materialization planned" events (a failed partition's) in one
INSERT and one index transaction, as dagster-postgres does for one event type. Dagster calls
`store_event_batch` for events logged with batch metadata (see mimo_assets/eventlog/batching.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from dagster import DagsterEventType, EventLogEntry
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection, Engine

from mimo_assets.dagster_private import (
    ConfigurableClassData,
    ConsolidatedSqliteEventLogStorage,
    SqlEventLogStorageTable,
)

SQLITE_BUSY_TIMEOUT_SECONDS = 30
_BATCHABLE = {
    DagsterEventType.ASSET_MATERIALIZATION,
    DagsterEventType.ASSET_OBSERVATION,
    DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
}


class BatchedSqliteEventLogStorage(ConsolidatedSqliteEventLogStorage):
    """Consolidated SQLite event log: one engine per process, one transaction per event batch."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engine: Engine | None = None
        self._engine_pid = 0
        super().__init__(base_dir, inst_data)

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]) -> Any:
        return cls(inst_data=inst_data, **config_value)

    def _shared_engine(self) -> Engine:
        """Created on first use and again in a forked child (a pooled connection must not cross a fork)."""
        if self._engine is None or self._engine_pid != os.getpid():
            self._engine = create_engine(
                self._conn_string,
                pool_size=4,
                max_overflow=8,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
            )
            self._engine_pid = os.getpid()
        return self._engine

    @contextmanager
    def _connect(self) -> Iterator[Connection]:
        with self._shared_engine().connect() as conn, conn.begin():
            yield conn

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """A batch of materializations, observations and planned materializations (any mix of assets and
        of these types): one INSERT ... RETURNING, then their tags and the asset rows in one index
        transaction. An asset's row takes different columns from each type (the latest materialization,
        the last run id, the last event's time), so the latest event of each asset and type is applied, in
        storage order: the row ends as storing the events one by one leaves it."""
        if not events or any(
            not e.is_dagster_event or e.get_dagster_event().event_type not in _BATCHABLE for e in events
        ):
            return super().store_event_batch(events)
        with self._connect() as conn:
            rows = conn.execute(self.prepare_insert_event_batch(events).returning(SqlEventLogStorageTable.c.id))
            event_ids = [int(row[0]) for row in rows.fetchall()]
        latest: dict[tuple[Any, DagsterEventType], tuple[EventLogEntry, int]] = {}
        for event, event_id in zip(events, event_ids, strict=True):
            dagster_event = event.get_dagster_event()
            latest[(dagster_event.asset_key, dagster_event.event_type)] = (event, event_id)
        with self.index_transaction() as conn:
            self._store_asset_event_tags(conn, list(events), event_ids)
            for event, event_id in sorted(latest.values(), key=lambda pair: pair[1]):
                self._store_asset_event(conn, event, event_id)

    def dispose(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
        super().dispose()
