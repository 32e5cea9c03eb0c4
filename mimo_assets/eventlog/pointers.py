"""Dagster's input event pointers between the events of one partition that are logged together.

A partition's rollouts, judge scores and graded results are built at once, but a graded result's
`dagster/input_event_pointer/rollouts` tag must hold the storage id of the rollouts event, which the
event log assigns only when it stores it. So an event that points at another one of its batch waits for the
next store (batching.StagedLog), where the ids of what was stored before are looked up (one query per
asset key) and filled in. Lineage in the UI then links a graded result to the very rollouts event it
was computed from.
"""

from __future__ import annotations

from collections.abc import Sequence

from dagster import AssetMaterialization, AssetObservation, DagsterEventType, DagsterInstance

from mimo_assets.dagster_private import AssetMaterializationFailure

POINTER = "dagster/input_event_pointer/"
UNSTORED = "NULL"  # what events.py writes for an input whose event is not stored yet

Event = AssetMaterialization | AssetMaterializationFailure | AssetObservation


def _waits_on(event: Event) -> set[str]:
    """Asset keys (user strings) this event points at without a storage id yet."""
    if not isinstance(event, AssetMaterialization):
        return set()
    return {
        tag[len(POINTER) :]
        for tag, value in (event.tags or {}).items()
        if tag.startswith(POINTER) and value == UNSTORED
    }


def split_ready(events: Sequence[Event]) -> tuple[list[Event], list[Event]]:
    """(events to store now, events that point at one of those in the same partition)."""
    present = {(e.asset_key.to_user_string(), e.partition) for e in events}
    ready: list[Event] = []
    waiting: list[Event] = []
    for e in events:
        blocked = any((key, e.partition) in present for key in _waits_on(e))
        (waiting if blocked else ready).append(e)
    return ready, waiting


def fill_pointers(instance: DagsterInstance, stored: Sequence[Event], waiting: Sequence[Event]) -> list[Event]:
    """`waiting` with its pointers at the `stored` events set to their storage ids (each partition's latest
    event of that asset is the one just stored)."""
    wanted: dict[str, set[str]] = {}
    for e in waiting:
        for key in _waits_on(e):
            wanted.setdefault(key, set()).add(str(e.partition))
    by_key = {e.asset_key.to_user_string(): e.asset_key for e in stored if isinstance(e, AssetMaterialization)}
    ids: dict[tuple[str, str], int] = {}
    for key, partitions in wanted.items():
        if key not in by_key:
            continue
        # ids only (one grouped query, no event bodies read back and deserialized)
        latest = instance.event_log_storage.get_latest_storage_id_by_partition(
            by_key[key], DagsterEventType.ASSET_MATERIALIZATION, partitions
        )
        ids.update({(key, partition): storage_id for partition, storage_id in latest.items()})
    out: list[Event] = []
    for e in waiting:
        found = {key: ids[(key, str(e.partition))] for key in _waits_on(e) if (key, str(e.partition)) in ids}
        if found and isinstance(e, AssetMaterialization):
            e = AssetMaterialization(
                e.asset_key,
                description=e.description,
                metadata=e.metadata,
                partition=e.partition,
                tags={**(e.tags or {}), **{POINTER + k: str(v) for k, v in found.items()}},
            )
        out.append(e)
    return out
