"""Run ONE (instance, config, k) end to end: sandbox up → agent → submission → judge → verifier → files.

The CLI and the Dagster assets both call `run_one`. It never raises for a rollout's own failure: every
outcome becomes a ResultRecord, and the results.jsonl line is written last so that its presence is what
marks a rollout finished. The phases have their own modules: the job (`job.py`), its sandboxes
(`rollout_sandboxes.py`), the agent phase (`agent_phase.py`), the grading phase (`grading_phase.py`) and
the record (`rollout_record.py`).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from mimo_core.agents.base import AgentResult
from mimo_core.base.host_cancel import cancellable
from mimo_core.base.redaction import register_environment
from mimo_core.containment.detect import Watch
from mimo_core.datasets.base import DatasetType
from mimo_core.datasets.requirements import preflight
from mimo_core.errors import MimoError, status_of
from mimo_core.grading.blame import WorkdirDestroyed, budget_exceeded
from mimo_core.grading.evidence import keep_verifier_evidence
from mimo_core.grading.grade import Grade
from mimo_core.grading.rubric import JudgeResult
from mimo_core.limits import set_limits
from mimo_core.records.results import ResultRecord, ResultsStore
from mimo_core.records.rollout_logs import RolloutFiles
from mimo_core.records.trajectory import Timings, read_trajectory
from mimo_core.run.agent_phase import GradingFailed, act
from mimo_core.run.attempts import is_finished_attempt, keep_failed_attempt
from mimo_core.run.disk_full import disk_full, is_disk_full
from mimo_core.run.grading_phase import blame, enter_grading, grade_rollout, judge_rollout, mark_baseline
from mimo_core.run.job import RolloutJob
from mimo_core.run.reference_check import reference_grades_cleanly
from mimo_core.run.rollout_record import now, write_outputs
from mimo_core.run.rollout_sandboxes import RolloutSandboxes
from mimo_core.status import INFRA_STATUSES, UNGRADED_STATUSES, ExitStatus


def _dataset_type(name: str, collect: str) -> DatasetType:
    from mimo_core.datasets.registry import get_dataset_type

    return get_dataset_type(name, collect=collect)


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


def _run(job: RolloutJob, rollout_dir: Path, rec: RolloutFiles, cancel: threading.Event | None) -> ResultRecord:
    task = job.task
    t0 = time.monotonic()
    timings = Timings(started_at=now())
    rec.log(f"rollout {job.rel_dir} run={job.run_id} config={job.config.name} dataset_type={task.dataset_type}")
    agent_result: AgentResult | None = None
    failure: tuple[ExitStatus, str] | None = None  # what stopped the rollout, if something did
    grade: Grade | None = None
    judge: JudgeResult | None = None
    submission: str | None = None
    sandboxes = RolloutSandboxes(job)
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
            agent_result, submission = act(job, dtype, env, rec, cancel)
        except GradingFailed as e:
            agent_result, submission = e.result, None
            grade = blame(job, Grade(infra_error=str(e)), rec, cancel, _reference(job, sandboxes))
        timings.agent_s = time.monotonic() - t1
        if (over := budget_exceeded(sandboxes.started)) is not None:  # ended for it: nothing worth grading
            raise over
        if grade is None and agent_result is not None and agent_result.exit_status not in UNGRADED_STATUSES:
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
    timings.ended_at = now()
    timings.total_s = time.monotonic() - t0
    status, error = _outcome(agent_result, failure, grade)
    return write_outputs(job, rollout_dir, rec, agent_result, status, error, submission, grade, judge, timings)


def _reference(job: RolloutJob, sandboxes: RolloutSandboxes) -> Any:
    """The reference check for this job's task, run only when asked (reference_check.py); a grading that
    failed because the sandbox was ended for its budget needs none: that is the agent's 0."""

    def check() -> bool | None:
        if (over := budget_exceeded(sandboxes.started)) is not None:
            raise over
        return reference_grades_cleanly(job, _dataset_type, lambda: RolloutSandboxes(job), enter_grading)

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
