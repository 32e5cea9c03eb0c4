"""Whose fault a grading failure is: the reference solution, graded in the same image, decides.

A verifier that hangs, a reward path that is a folder, a `.git` the collect cannot read, a full private
`/tmp`: after an agent's changes each looks like infrastructure, and an infrastructure status is rerun
and left out of scores, so a policy could learn to turn likely failures into reruns. When the task's
reference solution grades cleanly (no grading error, whatever its reward) in a fresh sandbox of the same
image, grading itself works there and the failure is the agent's: reward 0. The check runs once per task,
image and backend per process; a task without a reference solution cannot be checked (the failure stays
an infrastructure error).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mimo_core.errors import MimoError

if TYPE_CHECKING:
    from mimo_core.run.job import RolloutJob

_lock = threading.Lock()
_key_locks: dict[str, threading.Lock] = {}
_verdicts: dict[str, bool | None] = {}


def _key(job: RolloutJob) -> str:
    env = job.config.config.environment
    blob = json.dumps(
        [
            job.task.model_dump(mode="json"),
            env.environment_class,
            env.image_prefix,
            job.config.config.use_dataset_env,
            job.config.config.grading.model_dump(),
        ],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def reference_grades_cleanly(
    job: RolloutJob,
    dataset_type: Callable[[str, str], Any],
    sandboxes: Callable[[], Any],
    enter_grading: Callable[[Any, Any, Any], None],
) -> bool | None:
    """True: the reference grades without a grading error; False: it fails too; None: no reference."""
    key = _key(job)
    with _lock:
        key_lock = _key_locks.setdefault(key, threading.Lock())
    with key_lock:
        if key not in _verdicts:
            _verdicts[key] = _check(job, dataset_type, sandboxes, enter_grading)
        return _verdicts[key]


def _check(
    job: RolloutJob,
    dataset_type: Callable[[str, str], Any],
    sandboxes: Callable[[], Any],
    enter_grading: Callable[[Any, Any, Any], None],
) -> bool | None:
    task = job.task
    dtype = dataset_type(task.dataset_type, job.config.config.grading.collect)
    if not dtype.gold_submission(task) and not getattr(task, "solution_script", None):
        return None
    boxes = sandboxes()
    try:
        env = boxes.new(boxes.spec_for(dtype))
        dtype.setup(env, task)
        mark = getattr(env, "mark_system_baseline", None)
        if mark is not None:
            mark()
        applied, _ = dtype.apply_gold(env, task)
        if not applied:
            return False
        enter_grading(env, dtype, task)
        grade = dtype.grade(env, task, dtype.collect_submission(env, task), boxes.new)
        return grade.infra_error is None and grade.reward is not None
    except MimoError:
        return False
    finally:
        for env in boxes.started:
            try:
                env.stop()
            except Exception:
                pass
