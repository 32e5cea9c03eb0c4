"""A rollout's record: traj.json, reward_extra_info.json and the `ResultRecord` of its results.jsonl line,
assembled from what the rollout ended with. One place, so traj.json and results.jsonl always agree, and a
rollout that ended outside `run_one` (before its sandbox, or its Ray node lost) is written the same way."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mimo_core.agents.base import AgentResult
from mimo_core.base.atomic_files import write_json, write_model_json
from mimo_core.base.redaction import redact
from mimo_core.containment.events import attempts, counts
from mimo_core.grading.grade import Grade
from mimo_core.grading.rubric import JudgeResult
from mimo_core.records.results import ResultRecord
from mimo_core.records.rollout_logs import RolloutFiles
from mimo_core.records.trajectory import ModelInfo, Timings, Trajectory
from mimo_core.run.job import RolloutJob
from mimo_core.status import UNGRADED_STATUSES, ExitStatus


def now() -> str:
    """A record's time stamp: UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def write_failure(job: RolloutJob, status: ExitStatus, error: str) -> ResultRecord:
    """The files `run_one` writes for a rollout that failed before its sandbox, for one that ended outside
    `run_one` (its Ray node lost for good); the caller writes the record."""
    rollout_dir = job.output_dir / job.rel_dir
    rollout_dir.mkdir(parents=True, exist_ok=True)
    rec = RolloutFiles(rollout_dir)
    try:
        rec.log(f"rollout {job.rel_dir} run={job.run_id} config={job.config.name}: {status.value}: {error}")
        stamp = now()
        timings = Timings(started_at=stamp, ended_at=stamp)
        return write_outputs(job, rollout_dir, rec, None, status, error, None, None, None, timings)
    finally:
        rec.close()


def _grading_summary(details: dict[str, Any]) -> dict[str, Any]:
    """The scalar fields of reward_extra_info (f2p/p2p counts, apply_failed, ...) for results.jsonl."""
    return {
        k: v for k, v in details.items() if isinstance(v, (bool, int, float)) or (isinstance(v, str) and len(v) <= 200)
    }


def _model_info(job: RolloutJob) -> ModelInfo | None:
    """Read from the config (no SDK client is built only to learn a host); userinfo is never recorded."""
    cfg = job.config.config
    if job.recalc is not None or cfg.agent.type == "oracle":
        return None
    from mimo_core.models.endpoint import endpoint_host

    return ModelInfo(name=cfg.model.model_name, protocol=cfg.model.protocol, endpoint_host=endpoint_host(cfg.model))


def write_outputs(
    job: RolloutJob,
    rollout_dir: Path,
    rec: RolloutFiles,
    agent: AgentResult | None,
    status: ExitStatus,
    error: str | None,
    submission: str | None,
    grade: Grade | None,
    judge: JudgeResult | None,
    timings: Timings,
) -> ResultRecord:
    """Write reward_extra_info.json and traj.json, and return the results.jsonl record (written by the
    caller, last, since its line is what marks the rollout finished)."""
    extra: dict[str, Any] = {"reward": grade.reward if grade else None, **(grade.details if grade else {})}
    if judge is not None:
        extra["judge"] = judge.model_dump(mode="json")
    write_json(rollout_dir / "reward_extra_info.json", extra)
    timings.budget_wait_s = round(sum(c.wait_s for c in agent.calls), 3) if agent else 0.0
    traj = Trajectory.for_rollout(
        task=job.task,
        run_id=job.run_id,
        config_name=job.config.name,
        rollout_index=job.rollout_index,
        agent_type="recalc" if job.recalc else job.config.config.agent.type,
        model=_model_info(job),
        agent=agent,
        exit_status=status,
        error=error,
        submission=submission,
        timings=timings,
        config=job.config.redacted(),
        containment_events=rec.containment.events,
    )
    write_model_json(rollout_dir / "traj.json", traj)
    graded = grade if traj.exit_status not in UNGRADED_STATUSES else None
    rec.log(f"done: {traj.exit_status.value} reward={graded.reward if graded else None} in {timings.total_s:.2f}s")
    return ResultRecord(
        run_id=traj.run_id,
        instance_id=traj.instance_id,
        config_name=traj.config_name,
        rollout_index=traj.rollout_index,
        dataset_type=traj.dataset_type,
        agent_type=traj.agent_type,
        model_name=traj.model.name if traj.model else None,
        exit_status=traj.exit_status,
        error=(traj.error or None) and redact(traj.error)[:500],  # (the Dagster event log gets it from here)
        reward=graded.reward if graded else None,
        passed=graded.passed if graded else None,
        grading=_grading_summary(grade.details) if grade else {},
        judge_score=judge.score if judge else None,
        recalc=job.recalc,
        steps=traj.steps,
        prompt_tokens=traj.usage.prompt_tokens,
        completion_tokens=traj.usage.completion_tokens,
        cached_tokens=traj.usage.cached_tokens,
        reasoning_tokens=traj.usage.reasoning_tokens,
        cache_write_tokens=traj.usage.cache_write_tokens,
        cost=traj.cost,
        duration_s=round(timings.total_s, 3),
        budget_wait_s=timings.budget_wait_s,
        started_at=timings.started_at,
        ended_at=timings.ended_at,
        output_dir=job.rel_dir,
        input_fingerprint=job.input_fingerprint,
        repo_fingerprint=job.repo_fingerprint,
        containment_attempts=attempts(traj.containment_events),
        containment=counts(traj.containment_events),
    )
