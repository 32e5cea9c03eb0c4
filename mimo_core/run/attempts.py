"""Evidence survives a retry: a rollout done again after an ungraded failure keeps the failed attempt.

The failed attempt's folder (traj.json with its status and error, instance.log, agent_msgs/) moves to
`attempts/<n>/` inside the rollout's folder before the new attempt starts, so the cause of a flaky
failure can still be found after the resume that fixed it. A finished rollout redone with
`--redo-existing` is not an attempt: it is replaced (see rollout.run_one).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from mimo_core.records.trajectory import read_trajectory
from mimo_core.status import UNGRADED_STATUSES, ExitStatus

ATTEMPTS_DIR = "attempts"


def previous_status(rollout_dir: Path) -> ExitStatus | None:
    """How the attempt in `rollout_dir` ended (None: no trajectory, i.e. it was killed mid-way)."""
    try:
        return read_trajectory(rollout_dir / "traj.json").exit_status
    except ValueError:
        return None


def is_finished_attempt(rollout_dir: Path) -> bool:
    status = previous_status(rollout_dir)
    return status is not None and status not in UNGRADED_STATUSES


def keep_failed_attempt(rollout_dir: Path, run_id: str) -> int:
    """Move the unfinished attempt in `rollout_dir` to `rollout_dir/attempts/<n>/` and leave `rollout_dir`
    empty for the next one; return how many attempts are kept there now."""
    if not rollout_dir.exists():
        return 0
    side = rollout_dir.with_name(f"{rollout_dir.name}.kept-{run_id}")
    os.rename(rollout_dir, side)
    kept = rollout_dir / ATTEMPTS_DIR
    kept.mkdir(parents=True)
    older = side / ATTEMPTS_DIR
    if older.is_dir():
        for entry in sorted(older.iterdir(), key=_attempt_number):
            os.rename(entry, kept / entry.name)
        older.rmdir()
    n = len(list(kept.iterdir())) + 1
    if any(side.iterdir()):
        os.rename(side, kept / str(n))
        return n
    shutil.rmtree(side, ignore_errors=True)
    return n - 1


def _attempt_number(p: Path) -> int:
    return int(p.name) if p.name.isdigit() else 0
