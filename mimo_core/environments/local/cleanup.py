"""Labels on local sandboxes, and the sweep that removes those of dead runners.

Like containers, each local sandbox folder carries a label file (`sandbox.json`: run id, instance,
config, the runner's host, pid and process start time, the sandbox's process marker). `stop()` removes
the folder; a runner killed with SIGKILL cannot, so `mimoagent cleanup` and the start of every local run
call `cleanup()`: folders whose runner is gone lose their processes (found by their `MIMO_SANDBOX`
marker, also the ones that called `setsid`) and then the folder itself. Each runner's host-side scratch
(`process_scratch()`: prepared base repositories, verifier evidence in transit) is labelled the same way.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from mimo_core.environments.base import LABEL_RUN_ID
from mimo_core.environments.local import cgroups
from mimo_core.environments.local.procs import SANDBOX_VAR, kill_marked

LABEL_FILE = "sandbox.json"
REMOVED_FILE = "removed"  # written by a cleanup before it removes a sandbox (see LocalEnvironment.vanished)
PREFIX = "mimo-"


class SandboxLabel(BaseModel):
    sandbox_id: str
    host: str
    pid: int
    pid_start: int | None = None  # /proc/<pid>/stat start time: a reused pid is not our runner
    labels: dict[str, str] = Field(default_factory=dict)


def process_start(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat.rsplit(b")", 1)[1].split()[19])


def own_label(sandbox_id: str, labels: dict[str, str]) -> SandboxLabel:
    pid = os.getpid()
    return SandboxLabel(
        sandbox_id=sandbox_id, host=socket.gethostname(), pid=pid, pid_start=process_start(pid), labels=labels
    )


def write_label(base: str, label: SandboxLabel) -> None:
    tmp = os.path.join(base, f".{LABEL_FILE}.tmp")
    with open(tmp, "w") as f:
        f.write(label.model_dump_json())
    os.replace(tmp, os.path.join(base, LABEL_FILE))


_scratch: Path | None = None
_scratch_lock = threading.Lock()


def process_scratch() -> Path:
    """This process's own labelled folder under the system temp dir, for host-side scratch (prepared base
    repositories, verifier evidence on its way to the rollout folder). Removed at exit; a process killed
    before that leaves it labelled with its pid, so the next run's sweep removes it like a sandbox."""
    global _scratch
    with _scratch_lock:
        if _scratch is None:
            base = tempfile.mkdtemp(prefix=PREFIX + "scratch-", dir=default_root())
            write_label(base, own_label(f"scratch-{os.getpid()}-{uuid.uuid4().hex[:8]}", {}))
            _scratch = Path(base)
            atexit.register(_remove_own_scratch, base, os.getpid())
        return _scratch


def remove_process_scratch() -> None:
    """Remove this process's scratch folder now (for an exit that skips the atexit hook)."""
    with _scratch_lock:
        if _scratch is not None:
            remove_tree(str(_scratch))


def _remove_own_scratch(base: str, owner: int) -> None:
    if os.getpid() == owner:  # not a forked child exiting normally: the folder is its parent's
        remove_tree(base)


def read_label(base: Path) -> SandboxLabel | None:
    try:
        return SandboxLabel.model_validate_json((base / LABEL_FILE).read_text())
    except (OSError, ValidationError, ValueError):
        return None


def runner_alive(label: SandboxLabel) -> bool:
    if label.pid == os.getpid():
        return True
    start = process_start(label.pid)
    if start is None:
        return False
    return label.pid_start is None or start == label.pid_start


def default_root() -> str:
    return tempfile.gettempdir()


def cleanup(
    roots: list[str] | None = None, run_id: str | None = None, stale_only: bool = True, live: list[str] | None = None
) -> int:
    """Remove local sandboxes (of dead runners on this host, or of one run); return how many. With
    `stale_only`, each one left alone because its runner lives is described in `live`.

    Folders without a label are left alone: they are not known to be ours."""
    host = socket.gethostname()
    removed = 0
    for root in dict.fromkeys(os.path.abspath(r) for r in (roots or [default_root()])):
        try:
            entries = [e for e in os.scandir(root) if e.name.startswith(PREFIX) and e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for entry in entries:
            label = read_label(Path(entry.path))
            if label is None or label.host != host:
                continue
            if run_id is not None and label.labels.get(LABEL_RUN_ID) != run_id:
                continue
            if stale_only and runner_alive(label):
                if live is not None:
                    live.append(f"{entry.path} (run {label.labels.get(LABEL_RUN_ID, '?')}, pid {label.pid})")
                continue
            remove_sandbox(entry.path, label.sandbox_id)
            removed += 1
    cgroups.sweep()  # the cgroups of sandboxes whose runner died before it could remove them
    return removed


def remove_sandbox(base: str, sandbox_id: str) -> None:
    """Mark the sandbox removed (its runner, if alive, then knows whose doing it is), kill every process
    carrying its marker, then delete its folder."""
    try:
        with open(os.path.join(base, REMOVED_FILE), "x"):
            pass
    except OSError:
        pass
    kill_marked(SANDBOX_VAR, sandbox_id)
    remove_tree(base)


def remove_tree(base: str) -> None:
    """Delete a sandbox folder, its label last: a removal cut short by a kill leaves a labelled folder,
    which the next sweep knows to be ours, never an unlabelled one it must leave alone.

    Only a folder known to be ours goes: an absolute path that holds a label, or whose parent does (a
    sandbox's scratch and home). Anything else (an empty or relative path, a checkout) is left alone."""
    if not _ours(base):
        return
    try:
        entries = list(os.scandir(base))
    except FileNotFoundError:
        return
    except OSError:
        entries = []
    for entry in entries:
        if entry.name == LABEL_FILE:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, onerror=force_remove)
        else:
            try:
                os.unlink(entry.path)
            except OSError:
                force_remove(os.unlink, entry.path, None)
    shutil.rmtree(base, onerror=force_remove)


def _ours(base: str) -> bool:
    if not base or not os.path.isabs(base) or os.path.islink(base):
        return False
    base = os.path.normpath(base)
    return any(os.path.isfile(os.path.join(d, LABEL_FILE)) for d in (base, os.path.dirname(base)) if d != "/")


def force_remove(func: Any, path: str, _exc: Any) -> None:
    """rmtree helper: files the agent made read-only (or read-only folders) must go too. A symlink is never
    chmod-ed: that would change its target, which may be any file of the host."""
    try:
        os.chmod(os.path.dirname(path), 0o755)
        if not os.path.islink(path):
            os.chmod(path, 0o755)
        func(path)
    except OSError:
        pass
