"""Every use of Dagster's private API (`dagster._...`), in one place, so a Dagster upgrade touches this file.

Each entry says why the public API does not serve. The pinned set is dagster 1.13.27 (pyproject.toml);
tests/dagster/test_private_api.py fails when another module of the code location imports `dagster._`.
Names are loaded on first use (`__getattr__`): `mimoagent-dagster` reads `DAEMON_MODULE` without paying
for `import dagster`, and a process that never opens a SQLite home never imports its storage (~0.4 s).
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dagster._core.definitions.events import (
        AssetMaterializationFailure,
        AssetMaterializationFailureReason,
        AssetMaterializationFailureType,
    )
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


__all__ = [
    "DAEMON_MODULE",
    "AssetFailedToMaterializeData",
    "AssetMaterializationFailure",
    "AssetMaterializationFailureReason",
    "AssetMaterializationFailureType",
    "AssetMaterializationPlannedData",
    "ConfigurableClassData",
    "ConsolidatedSqliteEventLogStorage",
    "DagsterEventBatchMetadata",
    "SqlEventLogStorageTable",
    "enable_event_batches",
    "generate_event_batch_id",
    "step_context",
]
