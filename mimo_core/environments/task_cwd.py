"""Where a task's absolute cwd (`/app`, `/testbed`) is on the local backend.

With `sandbox: bwrap` the rollout's work folder is bound at the task's cwd, so an agent that runs
`cd /app` works exactly as in a container and `pwd` says `/app`. Without a sandbox the host has no
`/app`: a failed command that names it gets a note saying where the work folder is and which setting
gives container paths, instead of a bare "No such file or directory".
"""

from __future__ import annotations

import os
import re

from mimo_core.errors import SandboxError

# Given to bwrap by their own options (fresh /proc and /dev, private /tmp), not bound from the host.
_OWN_MOUNTS = {"proc", "dev", "tmp"}
# A task cwd here would hide what every command needs.
_SYSTEM_DIRS = {"/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/run", "/sbin",
                "/sys", "/tmp", "/usr", "/var"}


def bwrap_root_args() -> list[str]:
    """The host's top-level entries read-only, one by one (symlinks as symlinks).

    `--ro-bind / /` would make the sandbox root the read-only host root, where bwrap cannot create a
    mount point for `/app`; bound entry by entry, the root is bwrap's own folder and `--remount-ro /`
    (see `bwrap_task_cwd_args`) makes it read-only once the mount points exist.
    """
    args: list[str] = []
    for name in sorted(os.listdir("/")):
        if name in _OWN_MOUNTS:
            continue
        path = "/" + name
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        else:
            args += ["--ro-bind", path, path]
    return args


def bwrap_task_cwd_args(task_cwd: str, work: str, writable_roots: tuple[str, ...] = ("/tmp",)) -> list[str]:
    """Bind the work folder at the task's cwd, then make the sandbox root read-only.

    The destination must be creatable: it exists on the host (it is then hidden by the bind), or its
    first existing ancestor is `/` or a folder the sandbox mounts writable itself (`writable_roots`).
    """
    task_cwd = os.path.normpath(task_cwd) if task_cwd else ""
    if not task_cwd or not os.path.isabs(task_cwd) or task_cwd == work:
        return ["--remount-ro", "/"]
    if task_cwd in _SYSTEM_DIRS:
        raise SandboxError(f"the task's cwd {task_cwd} is a system folder; bwrap cannot bind the work folder "
                           "there (use sandbox: none, or the docker backend)")
    if not os.path.lexists(task_cwd):
        ancestor = os.path.dirname(task_cwd)
        while ancestor != "/" and not os.path.lexists(ancestor):
            ancestor = os.path.dirname(ancestor)
        if ancestor != "/" and not any(ancestor == r or ancestor.startswith(r.rstrip("/") + "/")
                                       for r in writable_roots):
            raise SandboxError(f"the task's cwd {task_cwd} lies in the host's read-only {ancestor}, where bwrap "
                               "cannot create it (use sandbox: none, or the docker backend)")
    return ["--bind", work, task_cwd, "--remount-ro", "/"]


def sandbox_path(path: str, task_cwd: str, work: str) -> str:
    """A host path inside the work folder as the sandboxed command sees it (under the task's cwd)."""
    if not task_cwd or task_cwd == work:
        return path
    if path == work or path.startswith(work.rstrip("/") + "/"):
        return task_cwd.rstrip("/") + path[len(work.rstrip("/")):]
    return path


def missing_cwd_note(command: str, returncode: int, task_cwd: str, work: str) -> str:
    """A line to append to a failed command's output when it named the task's cwd, which this host lacks."""
    if returncode == 0 or not task_cwd or task_cwd == work or os.path.lexists(task_cwd):
        return ""
    if not re.search(r"(?<![\w.\-/])" + re.escape(task_cwd.rstrip("/")) + r"(?![\w.\-])", command):
        return ""
    return (f"\n[mimoagent] {task_cwd} is the task's working directory inside a container; on the local backend "
            f"without a sandbox it is {work} (use relative paths). environment.sandbox: bwrap binds it at "
            f"{task_cwd}.\n")
