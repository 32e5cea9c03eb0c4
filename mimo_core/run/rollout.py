"""Run ONE (instance, config, k) end to end: sandbox up → agent → submission → judge → verifier → files.

The CLI and the Dagster assets both call `run_one`. It never raises for a rollout's own failure: every
outcome becomes a ResultRecord, and the results.jsonl line is written last so that its presence is what
marks a rollout finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from mimo_core.agents.base import AgentResult
from mimo_core.base.atomic_files import write_json, write_model_json
from mimo_core.base.redaction import redact, register_environment
from mimo_core.config import NamedConfig
from mimo_core.containment.detect import Watch
from mimo_core.containment.events import attempts, counts
from mimo_core.datasets.base import DatasetType, Task
from mimo_core.datasets.requirements import preflight
from mimo_core.datasets.task_limits import agent_deadline, with_task_limits
from mimo_core.environments.base import (
    LABEL_CONFIG,
    LABEL_INSTANCE,
    LABEL_ROLLOUT,
    LABEL_RUN_ID,
    Environment,
    SandboxSpec,
)
from mimo_core.environments.registry import make_environment
from mimo_core.errors import MimoError, SandboxError, status_of
from mimo_core.grading.evidence import keep_verifier_evidence
from mimo_core.grading.grade import Grade
from mimo_core.grading.rubric import JudgeResult
from mimo_core.limits import set_limits
from mimo_core.records.results import ResultRecord, ResultsStore
from mimo_core.records.trajectory import ModelInfo, Timings, Trajectory, read_trajectory
from mimo_core.run.attempts import is_finished_attempt, keep_failed_attempt
from mimo_core.run.blame import GradingFailed, WorkdirDestroyed, budget_exceeded, check_workdir
from mimo_core.run.disk_full import disk_full, is_disk_full
from mimo_core.run.folder_names import folder_name, legacy_folder_name
from mimo_core.run.grading_phase import (
    begin_grading,
    blame,
    enter_grading,
    grade_rollout,
    judge_rollout,
    mark_baseline,
    sandbox_gone,
)
from mimo_core.run.host_cancel import cancellable
from mimo_core.run.reference_check import reference_grades_cleanly
from mimo_core.run.rollout_logs import RolloutFiles
from mimo_core.status import INFRA_STATUSES, UNGRADED_STATUSES, ExitStatus

GT = "gt"


def safe_name(text: str) -> str:
    """`text` with every run of unsafe characters replaced by `_` (not injective: see rollout_names)."""
    return legacy_folder_name(text)


class RolloutJob(BaseModel):
    """Everything one rollout needs; picklable, so batches can run in threads or processes."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    task: Task
    config: NamedConfig
    rollout_index: int = 0
    output_dir: Path
    run_id: str
    recalc: str | None = None  # None: run the agent; "gt": grade the reference; else a source directory
    recalc_submission: str | None = None  # the saved submission, for a recalc from a directory
    repo_fingerprint: str | None = None  # the row's repository folder when the run was planned (input_change)

    @property
    def rel_dir(self) -> str:
        return f"{folder_name(self.task.instance_id)}/{folder_name(self.config.name)}/{self.rollout_index}"

    @property
    def legacy_rel_dir(self) -> str:
        """Where this rollout's folder was before folder names were made injective."""
        return (
            f"{legacy_folder_name(self.task.instance_id)}/{legacy_folder_name(self.config.name)}/{self.rollout_index}"
        )

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.task.instance_id, self.config.name, self.rollout_index)

    @property
    def input_fingerprint(self) -> str:
        return input_fingerprint(self.config, self.task)


def input_fingerprint(config: NamedConfig, task: Task) -> str:
    """What a rollout's input was, as a short hash of the redacted config and the row: a rollout that
    failed through its input's fault is worth redoing only once this changes."""
    blob = json.dumps([config.redacted(), task.model_dump(mode="json")], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _dataset_type(name: str, collect: str) -> DatasetType:
    from mimo_core.datasets.registry import get_dataset_type

    return get_dataset_type(name, collect=collect)


class _Sandboxes:
    """Every sandbox a rollout starts (the agent's and any separate verifier's), stopped in one place."""

    def __init__(self, job: RolloutJob):
        self.job = job
        self.started: list[Environment] = []

    def spec_for(self, dtype: DatasetType) -> SandboxSpec:
        from mimo_core.agents.factory import sandbox_mounts

        cfg = self.job.config.config
        spec = dtype.sandbox_spec(self.job.task, cfg.environment.cwd, cfg.environment.timeout, cfg.use_dataset_env)
        if spec.image and cfg.environment.image_prefix and not spec.image.startswith(cfg.environment.image_prefix):
            spec.image = cfg.environment.image_prefix + spec.image
        spec.env = {**spec.env, **cfg.environment.env}
        spec.mounts = {**spec.mounts, **sandbox_mounts(cfg)}  # the agent's shared installs
        spec.memory_mb = spec.memory_mb or cfg.environment.memory_mb  # budgets: the row's own win
        spec.storage_mb = spec.storage_mb or cfg.environment.storage_mb
        return spec

    def new(self, spec: SandboxSpec) -> Environment:
        job = self.job
        spec = spec.model_copy(deep=True)
        spec.labels = {
            **spec.labels,
            LABEL_RUN_ID: job.run_id,
            LABEL_INSTANCE: job.task.instance_id,
            LABEL_CONFIG: job.config.name,
            LABEL_ROLLOUT: str(job.rollout_index),
        }
        env = make_environment(job.config.config.environment, spec)
        self.started.append(env)
        env.start()
        return env

    def stop_all(self, rec: RolloutFiles) -> None:
        for env in self.started:
            try:
                env.stop()
            except Exception:
                rec.log_exception("stopping a sandbox failed")


def run_one(job: RolloutJob, cancel: threading.Event | None = None) -> ResultRecord:
    """A finished rollout being redone (`--redo-existing`) stays in place until its replacement is
    complete: the new attempt works in a side folder and is swapped in just before its record is written.
    An unfinished earlier attempt (an ungraded status, or killed mid-way) is evidence: it moves to
    `attempts/<n>/` in the rollout's folder and the record counts it (`attempts`)."""
    register_environment(os.environ)  # keys the SDKs and CLI agents read from the environment: never written
    set_limits(job.config.config.limits)  # this thread's byte budgets on agent-made data (mimo_core/limits.py)
    final = job.output_dir / job.rel_dir
    adopt_legacy_folder(job, final)
    for leftover in final.parent.glob(f"{final.name}.attempt-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    for leftover in final.parent.glob(f"{final.name}.replaced-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    redo = is_finished_attempt(final)
    work = final.with_name(f"{final.name}.attempt-{job.run_id}") if redo else final
    kept = 0 if redo else keep_failed_attempt(final, job.run_id)
    work.mkdir(parents=True, exist_ok=True)
    try:
        rec = RolloutFiles(
            work,
            Watch.for_rollout(job.config.config.model.model_kwargs.get("base_url"), job.task.source, job.output_dir),
        )
        try:
            with cancellable(cancel):
                record = _run(job, work, rec, cancel)
        finally:
            rec.close()
        record.attempts = kept + 1
        if redo:
            replaced = final.with_name(f"{final.name}.replaced-{job.run_id}")
            os.rename(final, replaced)
            os.rename(work, final)
            ResultsStore(job.output_dir).put(record)
            shutil.rmtree(replaced, ignore_errors=True)
        else:
            ResultsStore(job.output_dir).put(record)
    except OSError as e:
        if is_disk_full(e):
            raise disk_full(e, f"rollout {job.rel_dir}") from None
        raise
    return record


def adopt_legacy_folder(job: RolloutJob, final: Path) -> None:
    """A folder this rollout wrote under the old naming moves to its new name, when it is its own (its
    traj.json names the same rollout); one that is not, or whose owner cannot be told, stays where it is."""
    legacy = job.output_dir / job.legacy_rel_dir
    if legacy == final or os.path.lexists(final) or not os.path.isdir(legacy):  # (a too long name: False)
        return
    try:
        traj = read_trajectory(legacy / "traj.json")
    except ValueError:
        return
    if (traj.instance_id, traj.config_name, traj.rollout_index) != job.key:
        return
    final.parent.mkdir(parents=True, exist_ok=True)
    os.rename(legacy, final)


def write_failure(job: RolloutJob, status: ExitStatus, error: str) -> ResultRecord:
    """The files `run_one` writes for a rollout that failed before its sandbox, for one that ended outside
    `run_one` (its Ray node lost for good); the caller writes the record."""
    rollout_dir = job.output_dir / job.rel_dir
    rollout_dir.mkdir(parents=True, exist_ok=True)
    rec = RolloutFiles(rollout_dir)
    try:
        rec.log(f"rollout {job.rel_dir} run={job.run_id} config={job.config.name}: {status.value}: {error}")
        now = _now()
        timings = Timings(started_at=now, ended_at=now)
        return _write_outputs(job, rollout_dir, rec, None, status, error, None, None, None, timings)
    finally:
        rec.close()


def _run(job: RolloutJob, rollout_dir: Path, rec: RolloutFiles, cancel: threading.Event | None) -> ResultRecord:
    task = job.task
    t0 = time.monotonic()
    timings = Timings(started_at=_now())
    rec.log(f"rollout {job.rel_dir} run={job.run_id} config={job.config.name} dataset_type={task.dataset_type}")
    agent_result: AgentResult | None = None
    failure: tuple[ExitStatus, str] | None = None  # what stopped the rollout, if something did
    grade: Grade | None = None
    judge: JudgeResult | None = None
    submission: str | None = None
    sandboxes = _Sandboxes(job)
    try:
        dtype = _dataset_type(task.dataset_type, job.config.config.grading.collect)
        preflight(task, job.config.config)
        env = sandboxes.new(sandboxes.spec_for(dtype))
        dtype.setup(env, task)
        mark_baseline(env)
        timings.env_setup_s = time.monotonic() - t0
        rec.log(f"sandbox ready in {timings.env_setup_s:.2f}s, cwd={env.spec.cwd}")
        t1 = time.monotonic()
        try:
            agent_result, submission = _act(job, dtype, env, rec, cancel)
        except GradingFailed as e:
            agent_result, submission = e.result, None  # type: ignore[assignment]
            grade = blame(job, Grade(infra_error=str(e)), rec, cancel, _reference(job, sandboxes))
        timings.agent_s = time.monotonic() - t1
        if (over := budget_exceeded(sandboxes.started)) is not None:  # ended for it: nothing worth grading
            raise over
        if grade is None and agent_result.exit_status not in UNGRADED_STATUSES:
            t2 = time.monotonic()
            grade = grade_rollout(job, dtype, env, submission, sandboxes.new, rec, cancel, _reference(job, sandboxes))
            keep_verifier_evidence(grade, rollout_dir)
            judge = judge_rollout(job, env, submission, rollout_dir, rec)  # after the grade: it cannot change it
            timings.grading_s = time.monotonic() - t2
            if (over := budget_exceeded(sandboxes.started)) is not None:  # the verifier's run of the agent's code
                raise over
    except Exception as e:  # a rollout's failure must not take the whole batch down; the record says why
        over = budget_exceeded(sandboxes.started)  # a sandbox ended for its budget fails as infrastructure would
        if over is not None and e is not over:
            rec.log(f"{type(e).__name__}: {e} (after the sandbox was ended for its budget)")
            e = over
        if is_disk_full(e):
            raise disk_full(e, f"rollout {job.rel_dir}") from None
        status = status_of(e)
        if status in (ExitStatus.INTERNAL_ERROR, ExitStatus.ENVIRONMENT_ERROR):
            rec.log_exception(status.value)
        else:
            rec.log(f"{status.value}: {e}")
        if cancel is not None and cancel.is_set() and status in INFRA_STATUSES and over is None:
            status = ExitStatus.INTERRUPTED  # the stop broke it (a killed command, a removed sandbox)
        failure = (status, str(e) if isinstance(e, MimoError) else f"{type(e).__name__}: {e}")
        if isinstance(e, WorkdirDestroyed):
            grade = e.grade()
    finally:
        sandboxes.stop_all(rec)
    timings.ended_at = _now()
    timings.total_s = time.monotonic() - t0
    status, error = _outcome(agent_result, failure, grade)
    return _write_outputs(job, rollout_dir, rec, agent_result, status, error, submission, grade, judge, timings)


def _reference(job: RolloutJob, sandboxes: _Sandboxes) -> Any:
    """The reference check for this job's task, run only when asked (reference_check.py); a grading that
    failed because the sandbox was ended for its budget needs none: that is the agent's 0."""

    def check() -> bool | None:
        if (over := budget_exceeded(sandboxes.started)) is not None:
            raise over
        return reference_grades_cleanly(job, _dataset_type, lambda: _Sandboxes(job), enter_grading)

    return check


def _outcome(
    agent: AgentResult | None, failure: tuple[ExitStatus, str] | None, grade: Grade | None
) -> tuple[ExitStatus, str | None]:
    """The rollout's one status and error, written alike to traj.json and results.jsonl: what stopped
    it, else a grading failure, else how the agent ended."""
    if failure is not None:
        return failure
    if grade is not None and grade.infra_error:
        return ExitStatus.GRADING_ERROR, grade.infra_error
    assert agent is not None  # no failure means the agent (or the recalc) ran
    return agent.exit_status, agent.error


def _act(
    job: RolloutJob, dtype: DatasetType, env: Environment, rec: RolloutFiles, cancel: threading.Event | None
) -> tuple[AgentResult, str | None]:
    """Run the agent, or, for a recalc, put the reference/saved submission in place instead."""
    if job.recalc is None:
        from mimo_core.agents.factory import make_agent

        config = with_task_limits(job.config.config, job.task)
        if config.agent.time_limit != job.config.config.agent.time_limit:
            rec.log(f"agent time limit: {config.agent.time_limit:g}s (the task's agent_timeout_sec)")
        from mimo_core.agents.stop import AgentStop

        # The agent and its model client stop at the run's stop and at the time limit alike.
        agent = make_agent(config, dtype, cancel=AgentStop(cancel, config.agent.time_limit))
        with agent_deadline(env, config.agent.time_limit):
            result = agent.run(job.task, env, rec)
        if config.agent.type not in ("default", "oracle"):  # a CLI agent's tool calls, seen only now
            rec.containment.transcript(result.messages)
        if result.exit_status in UNGRADED_STATUSES:
            return result, None
        try:
            begin_grading(env, dtype, job.task, rec)
            return result, dtype.collect_submission(env, job.task)
        except SandboxError as e:
            check_workdir(env)  # the agent's own doing, if it destroyed its working directory
            if sandbox_gone(env) or (cancel is not None and cancel.is_set()):
                raise
            raise GradingFailed(f"collecting the submission failed: {e}", result) from e
    if job.recalc == GT:
        applied, log = dtype.apply_gold(env, job.task)
        begin_grading(env, dtype, job.task, rec)
        submission = dtype.collect_submission(env, job.task) if applied else (dtype.gold_submission(job.task) or "")
    else:
        submission = job.recalc_submission or ""
        applied, log = dtype.apply_submission(env, job.task, submission)
        begin_grading(env, dtype, job.task, rec)
    rec.log(f"recalc ({job.recalc}): submission {'applied' if applied else 'did NOT apply'}\n{log[-2000:]}")
    return AgentResult(exit_status=ExitStatus.RECALCULATED), submission


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


def _write_outputs(
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
    extra: dict[str, Any] = {"reward": grade.reward if grade else None, **(grade.details if grade else {})}
    if judge is not None:
        extra["judge"] = judge.model_dump(mode="json")
    write_json(rollout_dir / "reward_extra_info.json", extra)
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
    graded = grade is not None and traj.exit_status not in UNGRADED_STATUSES
    rec.log(f"done: {traj.exit_status.value} reward={grade.reward if graded else None} in {timings.total_s:.2f}s")
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
        reward=grade.reward if graded else None,
        passed=grade.passed if graded else None,
        grading=_grading_summary(grade.details) if grade else {},
        judge_score=judge.score if judge else None,
        recalc=job.recalc,
        steps=traj.steps,
        prompt_tokens=traj.usage.prompt_tokens,
        completion_tokens=traj.usage.completion_tokens,
        cached_tokens=traj.usage.cached_tokens,
        reasoning_tokens=traj.usage.reasoning_tokens,
        cost=traj.cost,
        duration_s=round(timings.total_s, 3),
        started_at=timings.started_at,
        ended_at=timings.ended_at,
        output_dir=job.rel_dir,
        input_fingerprint=job.input_fingerprint,
        repo_fingerprint=job.repo_fingerprint,
        containment_attempts=attempts(traj.containment_events),
        containment=counts(traj.containment_events),
    )
