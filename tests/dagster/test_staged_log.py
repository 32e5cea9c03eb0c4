"""Batches of a step's events are stored so that a graded result's input event pointer holds the
storage id of its rollouts event, one transaction a batch, and nothing held back is lost or stuck."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from dagster import AssetKey, AssetMaterialization, DagsterInstance, op
from dagster import job as dagster_job

from mimo_assets.eventlog.batching import batches, emit_all
from mimo_assets.eventlog.pointers import POINTER, UNSTORED

ROLLOUTS, JUDGE, GRADED = AssetKey("rollouts"), AssetKey("judge_scores"), AssetKey("graded_results")


def _event(key: AssetKey, partition: str, *inputs: AssetKey) -> AssetMaterialization:
    return AssetMaterialization(key, partition=partition, tags={POINTER + i.to_user_string(): UNSTORED for i in inputs})


def _ids(instance: DagsterInstance, key: AssetKey) -> dict[str, int]:
    return {str(r.partition_key): r.storage_id for r in instance.fetch_materializations(key, limit=100).records}


def _pointers(instance: DagsterInstance, key: AssetKey, parent: AssetKey) -> dict[str, str]:
    return {
        str(r.partition_key): r.asset_materialization.tags[POINTER + parent.to_user_string()]
        for r in instance.fetch_materializations(key, limit=100).records
    }


def _run(instance: DagsterInstance, items: Any, succeeds: bool = True) -> None:
    """One in-process run whose single step logs `items(instance)` through emit_all."""

    @op(out={})
    def log_them(context) -> Iterator[AssetMaterialization]:
        yield from emit_all(context, items(context.instance))

    @dagster_job
    def staged() -> None:
        log_them()

    assert staged.execute_in_process(instance=instance, raise_on_error=False).success is succeeds


def test_batches_yields_an_empty_list_when_nothing_arrives_for_a_while() -> None:
    gate = threading.Event()

    def source() -> Iterator[int]:
        yield 1
        gate.wait(10)
        yield 2

    out = []
    t0 = time.monotonic()
    for batch in batches(source(), idle_s=0.2):
        out.append(batch)
        if batch == []:
            gate.set()
    assert out[0] == [1] and out[-1] == [2] and [] in out, out
    assert time.monotonic() - t0 < 5


def test_a_graded_result_waits_for_the_next_store_and_points_at_its_rollouts_event() -> None:
    seen: dict[str, Any] = {}

    def items(instance: DagsterInstance) -> Iterator[list[AssetMaterialization]]:
        yield [_event(ROLLOUTS, "a"), _event(GRADED, "a", ROLLOUTS)]
        seen["after first batch"] = (len(_ids(instance, ROLLOUTS)), len(_ids(instance, GRADED)))
        yield []  # an idle tick of `batches`: what was held back is stored now
        seen["after idle tick"] = (_ids(instance, ROLLOUTS), _pointers(instance, GRADED, ROLLOUTS))

    with DagsterInstance.ephemeral() as instance:
        _run(instance, items)
        assert seen["after first batch"] == (1, 0)  # held back: its rollouts event had no id yet
        rollout_ids, pointers = seen["after idle tick"]
        assert pointers == {"a": str(rollout_ids["a"])}


def test_a_chain_of_three_is_stored_with_every_pointer_by_the_end_of_the_step() -> None:
    def items(instance: DagsterInstance) -> Iterator[list[AssetMaterialization]]:
        for p in ("a", "b"):
            yield [_event(ROLLOUTS, p), _event(JUDGE, p, ROLLOUTS), _event(GRADED, p, JUDGE)]

    with DagsterInstance.ephemeral() as instance:
        _run(instance, items)
        rollouts, judge = _ids(instance, ROLLOUTS), _ids(instance, JUDGE)
        assert _pointers(instance, JUDGE, ROLLOUTS) == {p: str(rollouts[p]) for p in ("a", "b")}
        assert _pointers(instance, GRADED, JUDGE) == {p: str(judge[p]) for p in ("a", "b")}


def test_held_events_are_stored_when_the_source_fails() -> None:
    """A rollout source that dies mid-run: what finished, held-back graded results included, is recorded."""

    def items(instance: DagsterInstance) -> Iterator[list[AssetMaterialization]]:
        yield [_event(ROLLOUTS, "a"), _event(GRADED, "a", ROLLOUTS)]
        raise RuntimeError("the batch runner died")

    with DagsterInstance.ephemeral() as instance:
        _run(instance, items, succeeds=False)
        assert _pointers(instance, GRADED, ROLLOUTS) == {"a": str(_ids(instance, ROLLOUTS)["a"])}
