"""The grading phase of one rollout: from the agent's last step to the verdict and the judge.

The agent's processes end, what it changed outside its work is put back (the system, the repository's git
config and test infrastructure: datasets/tamper.py), the verifier runs, its findings and the
`grading.tamper` policy shape the verdict, and a grading failure is blamed on the agent when the reference
solution grades cleanly in the same image (reference_check.py). `rollout.run_one` calls these in order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mimo_core.datasets.base import DatasetType, EnvFactory, Task
from mimo_core.datasets.tamper import apply_policy
from mimo_core.environments.base import Environment
from mimo_core.errors import MimoError, status_of
from mimo_core.grading.grade import Finding, Grade
from mimo_core.grading.rubric import JudgeResult
from mimo_core.records.rollout_logs import RolloutFiles
from mimo_core.status import INFRA_STATUSES

if TYPE_CHECKING:
    from mimo_core.run.job import RolloutJob

Reference = Callable[[], "bool | None"]  # does the task's reference solution grade cleanly here


def enter_grading(env: Environment, dtype: DatasetType, task: Task) -> None:
    """The grading phase's start without a record (the reference check's sandbox)."""
    begin = getattr(env, "begin_grading", None)
    if begin is not None:
        begin()
    dtype.prepare_grading(env, task)
    put_back(env, dtype, task)


def begin_grading(env: Environment, dtype: DatasetType, task: Task, rec: RolloutFiles) -> None:
    """The agent's phase ends here: every process it left is killed and the grading works in folders it
    never saw (GradingSeam); what it left running or planted for the verifier is recorded."""
    begin = getattr(env, "begin_grading", None)
    if begin is None:  # a backend of your own without the seam: graded as before, and said so
        rec.log("grading: the backend has no begin_grading: the agent's processes may still be running")
        return
    alive = begin()
    if alive:
        rec.containment.add(
            "lingering_processes", f"{alive} process(es) still running when the agent finished; killed before grading"
        )
    planted = dtype.prepare_grading(env, task)
    if planted:
        rec.containment.add("planted_files", "found where only the verifier writes, removed: " + ", ".join(planted))
    found = put_back(env, dtype, task)
    for f in found:
        rec.containment.add(f.kind, f.detail)
    rec.log(
        f"grading: {alive} process(es) of the agent killed; verifier folders fresh"
        + (f"; removed {len(planted)} planted file(s)" if planted else "")
        + "".join(f"; {f.kind}: {f.detail}" for f in found)
    )


def mark_baseline(env: Environment) -> None:
    """The system as the task's setup left it: what changes after this outside the repository is the
    agent's (discard_system_changes), on backends that can tell."""
    mark = getattr(env, "mark_system_baseline", None)
    if mark is not None:
        mark()


def put_back(env: Environment, dtype: DatasetType, task: Task) -> list[Finding]:
    """What the agent changed outside its work (files of the system, the repository's test infrastructure
    and git config) put back before anything of grading runs; what was found, for the record."""
    found: list[Finding] = []
    discard = getattr(env, "discard_system_changes", None)
    if discard is not None:
        keep = [env.spec.cwd, env.scratch_dir, "/logs", "/tests", "/solution"]
        changed = discard(keep)
        if changed:
            shown = ", ".join(changed[:12]) + (f" and {len(changed) - 12} more" if len(changed) > 12 else "")
            found.append(
                Finding(
                    kind="system_files",
                    detail=f"{len(changed)} path(s) outside the repository changed, put back before grading: {shown}",
                )
            )
            getattr(dtype, "tamper_findings", []).extend(found)
    secure = getattr(dtype, "secure_repository", None)
    if secure is not None:
        found += secure(env, task)
    return found


def grade_rollout(
    job: RolloutJob,
    dtype: DatasetType,
    env: Environment,
    submission: str | None,
    new_env: EnvFactory,
    rec: RolloutFiles,
    cancel: threading.Event | None,
    reference: Reference,
) -> Grade:
    """The verifier's verdict, then what grading found (void verdicts and the tamper policy), then whose
    fault a grading failure is (`blame`)."""
    task = job.task
    try:
        grade = dtype.grade(env, task, submission or "", new_env)
    except MimoError as e:
        if status_of(e) not in INFRA_STATUSES or sandbox_gone(env) or (cancel is not None and cancel.is_set()):
            raise
        grade = Grade(infra_error=f"grading failed: {e}")
    for f in grade.findings:
        rec.containment.add(f.kind, f.detail)
    history = getattr(dtype, "history", None)  # a repository dataset type's history cut, when it made one
    if history:
        grade.details.setdefault("history_cut", history)
    earlier = _unique(getattr(dtype, "tamper_findings", []))
    grade = apply_policy(grade, earlier + grade.findings, job.config.config.grading.tamper)
    grade = blame(job, grade, rec, cancel, reference)
    rec.log(
        f"graded: reward={grade.reward} passed={grade.passed}"
        + (f" infra_error={grade.infra_error}" if grade.infra_error else "")
    )
    return grade


def _unique(findings: list[Finding]) -> list[Finding]:
    seen: dict[tuple[str, str], Finding] = {}
    for f in findings:
        seen.setdefault((f.kind, f.detail), f)
    return list(seen.values())


def sandbox_gone(env: Environment) -> bool:
    vanished = getattr(env, "vanished", None)
    try:
        return bool(vanished is not None and vanished())
    except Exception:
        return True


def blame(
    job: RolloutJob, grade: Grade, rec: RolloutFiles, cancel: threading.Event | None, reference: Reference
) -> Grade:
    """A grading failure after the agent's changes is the agent's 0 when the reference solution grades
    cleanly in the same image (reference_check, once per task); otherwise it stays an infrastructure error."""
    if not grade.infra_error or job.recalc is not None or (cancel is not None and cancel.is_set()):
        return grade
    verdict = reference()
    rec.log(
        f"grading failed ({grade.infra_error}); the reference solution in the same image: "
        + {
            True: "grades cleanly: the agent's 0",
            False: "fails too: an infrastructure error",
            None: "cannot be graded (no reference solution): an infrastructure error",
        }[verdict]
    )
    grade.details["reference_check"] = {True: "clean", False: "failed", None: "unavailable"}[verdict]
    if verdict is not True:
        return grade
    details = {**grade.details, "reward": 0.0, "grading_failed_after_agent": grade.infra_error}
    return grade.model_copy(update={"reward": 0.0, "passed": False, "infra_error": None, "details": details})


def judge_rollout(
    job: RolloutJob, env: Environment, submission: str | None, rollout_dir: Path, rec: RolloutFiles
) -> JudgeResult | None:
    """The rubric judge, after the verdict (it cannot change it), on a read-only view where there is one."""
    judge_cfg = job.config.config.environment.judge_agent
    if judge_cfg is None or job.task.rubric is None or not job.task.rubric.rubrics:
        return None
    from mimo_core.agents.judge import run_judge

    view_of = getattr(env, "read_only_view", None)
    view = view_of() if view_of is not None else None
    rec.log(
        "judge: scoring rubrics "
        + (
            "in a read-only view of the final state"
            if view is not None
            else "with read-only file tools (no shell on this backend)"
        )
    )
    try:
        return run_judge(
            judge_cfg,
            job.task,
            view or env,
            rollout_dir / "judge",
            run_id=job.run_id,
            config_name=job.config.name,
            rollout_index=job.rollout_index,
            shell=view is not None,
            submission=submission or "",
        )
    finally:
        if view is not None:
            view.stop()
