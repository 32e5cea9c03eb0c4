"""Materialization events for one partition's K rollouts: what a person reads in the UI, plus the
provenance tags Dagster uses for lineage (input event pointers and data versions).

Events are built here and logged by whichever step ran or recorded the rollouts, so the CLI door and
the UI door produce identical materializations.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from dagster import AssetKey, AssetMaterialization, AssetObservation, MetadataValue

from mimo_assets.asset_keys import GRADED_RESULTS, JUDGE_SCORES, ROLLOUTS
from mimo_assets.dagster_private import (
    AssetMaterializationFailure,
    AssetMaterializationFailureReason,
    AssetMaterializationFailureType,
)

if TYPE_CHECKING:
    from mimo_assets.dagster_private import RawMetadataValue
from mimo_assets.partitions import partition_key
from mimo_core.base.redaction import redact
from mimo_core.records.results import RESULTS_FILE, ResultRecord
from mimo_core.viewer.urls import rollout_url

CODE_VERSION = "1"

# Dagster's provenance tag names (dagster._core.definitions.data_version), spelled out: they are
# stored in the event log and read back by the UI, so they are stable.
_DATA_VERSION = "dagster/data_version"
_CODE_VERSION = "dagster/code_version"


def _input_tags(inputs: dict[AssetKey, tuple[int | None, str]]) -> dict[str, str]:
    tags: dict[str, str] = {}
    for key, (storage_id, version) in inputs.items():
        tags[f"dagster/input_data_version/{key.to_user_string()}"] = version
        tags[f"dagster/input_event_pointer/{key.to_user_string()}"] = str(storage_id) if storage_id else "NULL"
    return tags


def run_tags(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Tags every event of a run carries: its date (a nightly run's night), plus the caller's."""
    return {"mimoagent/date": date.today().isoformat(), **(extra or {})}


def data_version(*parts: str) -> str:
    return hashlib.sha1("\0".join(parts).encode()).hexdigest()[:16]


@dataclass
class Upstream:
    """Latest storage id and data version of each unpartitioned input, looked up once per run."""

    inputs: dict[AssetKey, tuple[int | None, str]] = field(default_factory=dict)


def _summary(values: Sequence[str]) -> str:
    counts = Counter(values)
    return ", ".join(f"{v}×{n}" if n > 1 else v for v, n in counts.most_common())


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _rollout_table(records: Sequence[ResultRecord], run_dir: Path) -> str:
    rows = [
        "| k | exit status | reward | steps | tokens | cost | duration s | viewer |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        rows.append(
            f"| {r.rollout_index} | {r.exit_status} | {r.reward} | {r.steps} | "
            f"{r.prompt_tokens + r.completion_tokens} | {r.cost:.4f} | {r.duration_s:.2f} | "
            f"[open]({rollout_url(run_dir, r.output_dir)}) |"
        )
    return "\n".join(rows)


def partition_events(
    dataset: str,
    records: Sequence[ResultRecord],
    run_dir: Path,
    upstream: Upstream,
    tags: dict[str, str],
    graded_only: bool = False,
    regraded: tuple[AssetKey, int | None, str] | None = None,
    always_judge: bool = False,
) -> list[AssetMaterialization]:
    """rollouts → judge_scores → graded_results for one (instance, config); only the last for a recalc.
    judge_scores only when a judge ran, unless `always_judge` (a backfill that selected it expects it)."""
    records = sorted(records, key=lambda r: r.rollout_index)
    first = records[0]
    pk = partition_key(dataset, first.instance_id, first.config_name)
    run_dir = run_dir.resolve()
    trajs = [run_dir / r.output_dir / "traj.json" for r in records]
    rewards = [r.reward for r in records if r.reward is not None]
    common: dict[str, RawMetadataValue] = {
        "run_id": first.run_id,
        "rollouts": len(records),
        "output_dir": MetadataValue.path(str(run_dir)),
    }
    base = {**tags, "mimoagent/run_id": first.run_id, _CODE_VERSION: CODE_VERSION}
    rollout_v = data_version(first.run_id, *map(str, trajs))
    judge_v = data_version(rollout_v, *(str(r.judge_score) for r in records))
    graded_v = data_version(judge_v, *(f"{r.reward}:{r.passed}:{r.recalc}" for r in records))
    scores = [r.judge_score for r in records if r.judge_score is not None]
    judged = bool(scores) or always_judge
    if regraded is not None:
        graded_inputs = {regraded[0]: (regraded[1], regraded[2])}
    else:
        graded_inputs = {JUDGE_SCORES: (None, judge_v)} if judged else {ROLLOUTS: (None, rollout_v)}
    graded = AssetMaterialization(
        GRADED_RESULTS,
        partition=pk,
        metadata={
            **common,
            "reward": _mean(rewards) if rewards else None,
            "passed": sum(1 for r in records if r.passed),
            "exit_status": _summary([r.exit_status for r in records]),
            "recalc": first.recalc,
            "results_file": MetadataValue.path(str(run_dir / RESULTS_FILE)),
            "reward_extra_info": MetadataValue.path(str(run_dir / first.output_dir / "reward_extra_info.json")),
        },
        tags={**base, _DATA_VERSION: graded_v, **_input_tags(graded_inputs)},
    )
    if graded_only:
        return [graded]
    rollouts = AssetMaterialization(
        ROLLOUTS,
        partition=pk,
        metadata={
            **common,
            "exit_status": _summary([r.exit_status for r in records]),
            "reward": _mean(rewards) if rewards else None,
            "steps": _mean([r.steps for r in records]),
            "tokens": sum(r.prompt_tokens + r.completion_tokens for r in records),
            "cost": sum(r.cost for r in records),
            "duration_s": _mean([r.duration_s for r in records]),
            "trajectory": MetadataValue.path(str(trajs[0])),
            # The rollout's page in `mimoagent view` ($MIMOAGENT_VIEWER_URL; the table links each of K).
            "viewer": MetadataValue.url(rollout_url(run_dir, first.output_dir)),
            **({"rollout_table": MetadataValue.md(_rollout_table(records, run_dir))} if len(records) > 1 else {}),
        },
        tags={**base, _DATA_VERSION: rollout_v, **_input_tags(upstream.inputs)},
    )
    if not judged:  # no judge ran: no judge_scores event (graded results point at the rollouts)
        return [rollouts, graded]
    judge = AssetMaterialization(
        JUDGE_SCORES,
        partition=pk,
        metadata={**common, "judge_score": _mean(scores) if scores else None, "judged": len(scores)},
        tags={**base, _DATA_VERSION: judge_v, **_input_tags({ROLLOUTS: (None, rollout_v)})},
    )
    return [rollouts, judge, graded]


FAILED = "failed"  # the `status` of the observation a failed partition gets


def partition_failures(
    dataset: str,
    records: Sequence[ResultRecord],
    tags: dict[str, str],
    graded_only: bool = False,
    run_dir: Path | None = None,
) -> list[AssetMaterializationFailure | AssetObservation]:
    """A partition whose rollouts hit an infrastructure error: failed (not missing, not a 0 score). Dagster's
    SQLite and PostgreSQL event logs drop its ASSET_FAILED_TO_MATERIALIZE events for these assets
    (`can_store_asset_failure_events` is false), so each failure also gets an observation of the same asset
    and partition, which they keep and the partition's page lists (its events: materializations,
    observations, failures): status `failed`, the error class and message, the rollout's folder and its
    viewer link. The results table counts the rollouts it names (analysis/table.failed_by_night)."""
    bad = sorted((r for r in records if r.infra_error), key=lambda r: r.rollout_index)
    first = bad[0]
    pk = str(partition_key(dataset, first.instance_id, first.config_name))
    why = redact("; ".join(f"#{r.rollout_index} {r.exit_status}: {(r.error or '')[:200]}" for r in bad))
    keys = [GRADED_RESULTS] if graded_only else [ROLLOUTS, GRADED_RESULTS]
    event_tags = {**tags, "mimoagent/run_id": first.run_id}
    failures: list[AssetMaterializationFailure | AssetObservation] = [
        AssetMaterializationFailure(
            key,
            partition=pk,
            failure_type=AssetMaterializationFailureType.FAILED,
            reason=AssetMaterializationFailureReason.FAILED_TO_MATERIALIZE,
            description=f"infrastructure error: {why}",
            tags=event_tags,
            metadata={"exit_status": _summary([r.exit_status for r in bad])},
        )
        for key in keys
    ]
    if run_dir is None:
        return failures
    run_dir = run_dir.resolve()
    metadata: dict[str, RawMetadataValue] = {
        "status": FAILED,
        "error_class": _summary([str(r.error_class or r.exit_status) for r in bad]),
        "message": MetadataValue.text(why[:2000]),
        "run_id": first.run_id,
        "rollouts": len(records),
        "failed_rollouts": len(bad),
        "recalc": first.recalc,
        "output_dir": MetadataValue.path(str(run_dir)),
        "rollout_dir": MetadataValue.path(str(run_dir / first.output_dir)),
        "viewer": MetadataValue.url(rollout_url(run_dir, first.output_dir)),
    }
    return failures + [
        AssetObservation(
            key,
            partition=pk,
            description=f"failed: infrastructure error: {why}"[:1000],
            metadata=metadata,
            tags=event_tags,
        )
        for key in keys
    ]


@dataclass
class Kept:
    """A partition whose rollouts hit an infrastructure error but which keeps its earlier graded result
    (mimo_assets.cell_result): no failure is logged for it; the step still fails the run, naming it."""

    partition: str
    description: str


KEPT_TAG = "mimoagent/kept_after"  # value: infra_error (an event tag: <= 63 word characters); why: the description


def kept_copies(latest: Sequence[AssetMaterialization], why: str) -> list[AssetMaterialization]:
    """The partition's latest events logged again, unchanged but for a tag and a description saying why: in
    a run where Dagster planned the partition (a backfill), a failed run would otherwise count it failed
    though its result stands."""
    return [
        AssetMaterialization(
            m.asset_key,
            description=f"kept after {why}"[:1000],
            metadata=m.metadata,
            partition=m.partition,
            tags={**(m.tags or {}), KEPT_TAG: "infra_error"},
        )
        for m in latest
    ]


class PartitionGrouper:
    """Holds records until all K planned rollouts of a partition are in, so each partition gets one
    materialization per asset per run rather than K."""

    def __init__(self, planned: Sequence[tuple[str, str, int]]):
        self.expected: Counter[tuple[str, str]] = Counter((i, c) for i, c, _ in planned)
        self.pending: dict[tuple[str, str], list[ResultRecord]] = {}

    def add(self, record: ResultRecord) -> list[ResultRecord] | None:
        key = (record.instance_id, record.config_name)
        group = self.pending.setdefault(key, [])
        group.append(record)
        if len(group) >= self.expected.get(key, 1):
            return self.pending.pop(key)
        return None

    def leftovers(self) -> list[list[ResultRecord]]:
        """Partitions whose run ended early (Ctrl-C): what finished is still recorded."""
        out = list(self.pending.values())
        self.pending.clear()
        return out
