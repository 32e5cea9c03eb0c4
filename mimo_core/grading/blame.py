"""Whose fault a failure is, when the obvious reading blames the wrong party.

A sandbox error while collecting the submission looks like infrastructure, but when the sandbox still
answers and the working directory is gone (or emptied), the agent destroyed it: retrying would replay
the same choice forever. That rollout ends with the agent's own status and a reward of 0.
"""

from __future__ import annotations

import shlex

from mimo_core.environments.base import Environment
from mimo_core.errors import MimoError, SandboxError
from mimo_core.grading.grade import Grade
from mimo_core.status import ExitStatus


class WorkdirDestroyed(MimoError):
    """The agent removed or emptied its own working directory: its doing, graded 0, not retried."""

    status = ExitStatus.AGENT_ERROR

    def grade(self) -> Grade:
        return Grade(reward=0.0, passed=False, details={"workdir_destroyed": True})


class BudgetExceeded(WorkdirDestroyed):
    """The sandbox went past one of its budgets (memory, disk: environment/budgets.py) and was ended for
    it: the agent's doing, graded 0 with the reason recorded, not retried."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind} budget exceeded" + (f": {detail}" if detail else ""))
        self.kind, self.detail = kind, detail

    def grade(self) -> Grade:
        return Grade(reward=0.0, passed=False, details={"budget_exceeded": self.kind, "budget_detail": self.detail})


def budget_exceeded(envs: list[Environment]) -> BudgetExceeded | None:
    """The first budget one of these sandboxes went past (backends that watch their budgets say so)."""
    for env in envs:
        ask = getattr(env, "budget_exceeded", None)
        try:
            found = ask() if ask is not None else None
        except Exception:
            found = None
        if found is not None:
            return BudgetExceeded(found.kind, found.detail)
    return None


class GitDirReplaced(WorkdirDestroyed):
    """The agent replaced its repository's .git folder (a link, a file, gone): nothing can be graded."""

    def grade(self) -> Grade:
        return Grade(reward=0.0, passed=False, details={"git_dir_replaced": True})


def check_workdir(env: Environment) -> None:
    """Raise WorkdirDestroyed if the sandbox is alive but its working directory is missing or empty; a
    sandbox removed from outside (`vanished`, where the backend can tell) is the infrastructure's."""
    vanished = getattr(env, "vanished", None)
    if vanished is not None and vanished():
        return
    cwd = shlex.quote(env.spec.cwd)
    try:
        probe = env.execute(f'test -d {cwd} && test -n "$(ls -A {cwd} 2>/dev/null)"', timeout=30, cwd="/")
    except SandboxError:
        return  # the sandbox itself is gone: an infrastructure failure after all
    if probe.returncode != 0 and not probe.timed_out:
        raise WorkdirDestroyed(
            f"the agent removed or emptied its own working directory ({env.spec.cwd}); nothing to grade"
        )
