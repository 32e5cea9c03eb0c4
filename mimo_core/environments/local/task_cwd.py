"""Where a task's absolute cwd (`/app`, `/testbed`) is on the local backend.

With `sandbox: bwrap` the rollout's work folder is bound at the task's cwd, so an agent that runs
`cd /app` works exactly as in a container and `pwd` says `/app`. Without a sandbox the host has no
`/app`: a failed command that names it gets a note saying where the work folder is and which setting
gives container paths, instead of a bare "No such file or directory".
"""

from __future__ import annotations

import os
import re

from mimo_core.environments.local.allowlist import is_system_path
from mimo_core.errors import SandboxError


def bwrap_task_cwd_args(task_cwd: str, work: str, read_only: bool = False) -> list[str]:
    """Bind the work folder at the task's cwd, then make the sandbox root read-only.

    The sandbox's root is bwrap's own empty folder (allowlist.py), so the mount point can be made
    anywhere but inside the read-only system folders (`/usr`, `/etc`, ...), whose contents every
    command needs.
    """
    task_cwd = os.path.normpath(task_cwd) if task_cwd else ""
    if not task_cwd or not os.path.isabs(task_cwd) or task_cwd == work:
        return ["--remount-ro", "/"]
    top = "/" + task_cwd.split("/")[1]
    if task_cwd == top and is_system_path(task_cwd):
        raise SandboxError(
            f"the task's cwd {task_cwd} is a system folder; bwrap cannot bind the work folder "
            "there (use sandbox: none, or the docker backend)"
        )
    if is_system_path(task_cwd):
        raise SandboxError(
            f"the task's cwd {task_cwd} lies in the host's read-only {top}, where bwrap "
            "cannot create it (use sandbox: none, or the docker backend)"
        )
    return ["--ro-bind" if read_only else "--bind", work, task_cwd, "--remount-ro", "/"]


def bwrap_cwd_problem(task_cwd: str) -> str | None:
    """Why bwrap cannot give a sandbox this cwd (see `bwrap_task_cwd_args`), or None: asked at plan time."""
    try:
        bwrap_task_cwd_args(task_cwd, "")
    except SandboxError as e:
        return str(e)
    return None


def sandbox_path(path: str, task_cwd: str, work: str) -> str:
    """A host path inside the work folder as the sandboxed command sees it (under the task's cwd)."""
    if not task_cwd or task_cwd == work:
        return path
    if path == work or path.startswith(work.rstrip("/") + "/"):
        return task_cwd.rstrip("/") + path[len(work.rstrip("/")) :]
    return path


def missing_cwd_note(command: str, returncode: int, task_cwd: str, work: str) -> str:
    """A line to append to a failed command's output when it named the task's cwd, which this host lacks."""
    if returncode == 0 or not task_cwd or task_cwd == work or os.path.lexists(task_cwd):
        return ""
    if not re.search(r"(?<![\w.\-/])" + re.escape(task_cwd.rstrip("/")) + r"(?![\w.\-])", command):
        return ""
    return (
        f"\n[mimoagent] {task_cwd} is the task's working directory inside a container; on the local backend "
        f"without a sandbox it is {work} (use relative paths). environment.sandbox: bwrap binds it at "
        f"{task_cwd}.\n"
    )
