"""Resource limits for a bubblewrap sandbox: a cgroup of its own (pids, memory, cpu), as docker gives a
container, so a fork bomb or a runaway allocation stays inside the rollout instead of starving the host.

The sandbox's first process joins the cgroup before it execs bubblewrap (`wrap`), so every process of
the sandbox is in it from its first instruction; bwrap's own cgroup namespace then hides the host's
hierarchy from inside. The cgroup is made under the runner's own cgroup, on cgroup v1 (one folder per
controller) or v2 (the controllers the runner's cgroup already delegates to its children; we never
change the host's cgroup settings). Where a controller cannot be used (no root, a v2 hierarchy that does
not delegate it), that limit is not enforced, and a warning says which, once per process.
"""

from __future__ import annotations

import errno
import logging
import os
import shlex
import time
from dataclasses import dataclass

log = logging.getLogger("mimoagent.local")

PREFIX = "mimo-"
CONTROLLERS = ("pids", "memory", "cpu")
_CPU_PERIOD_US = 100_000
_STALE_AFTER_S = 60.0  # an empty cgroup this old is a leftover (a new one is joined within milliseconds)
_warned: set[str] = set()


@dataclass(frozen=True)
class Limits:
    """What one sandbox may use; None: no limit of that kind."""

    pids: int | None = None
    memory_mb: int | None = None
    cpus: float | None = None

    def wanted(self) -> list[str]:
        return [c for c, v in zip(CONTROLLERS, (self.pids, self.memory_mb, self.cpus), strict=True) if v]


def _lines(path: str) -> list[str]:
    """The lines of a /proc file; none when it cannot be read (no limits are offered then)."""
    try:
        with open(path) as f:
            return f.read().splitlines()
    except OSError:
        return []


def _own_paths() -> tuple[dict[str, str], str | None]:
    """This process's cgroup per v1 controller, and its v2 cgroup (None without a v2 line)."""
    v1: dict[str, str] = {}
    v2 = None
    for line in _lines("/proc/self/cgroup"):
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            v2 = path
        for c in controllers.split(","):
            v1[c] = path
    return v1, v2


def _mounts() -> tuple[dict[str, tuple[str, str]], tuple[str, str] | None]:
    """Writable cgroup mounts: v1 controller -> (mount point, its root), and the v2 (mount point, root)."""
    v1: dict[str, tuple[str, str]] = {}
    v2 = None
    for line in _lines("/proc/self/mountinfo"):
        left, _, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if len(fields) < 6 or len(rest) < 3 or "rw" not in fields[5].split(","):
            continue
        root, point = fields[3], fields[4].replace("\\040", " ")
        if rest[0] == "cgroup":
            for c in set(rest[2].split(",")) & set(CONTROLLERS):
                v1.setdefault(c, (point, root))
        elif rest[0] == "cgroup2" and v2 is None:
            v2 = (point, root)
    return v1, v2


def _under(point: str, root: str, path: str) -> str:
    rel = path[len(root) :] if root != "/" and path.startswith(root) else path
    return os.path.join(point, rel.lstrip("/"))


def parent_dirs() -> dict[str, str]:
    """controller -> the folder under which a sandbox's cgroup for it is made (the runner's own cgroup)."""
    if os.geteuid() != 0:
        return {}
    own_v1, own_v2 = _own_paths()
    mounts_v1, mount_v2 = _mounts()
    found: dict[str, str] = {}
    for c, (point, root) in mounts_v1.items():
        if c in own_v1:
            found[c] = _under(point, root, own_v1[c])
    if mount_v2 is not None and own_v2 is not None:
        base = _under(*mount_v2, own_v2)
        try:
            with open(os.path.join(base, "cgroup.subtree_control")) as f:
                delegated = set(f.read().split())
        except OSError:
            delegated = set()
        for c in delegated & set(CONTROLLERS):
            found.setdefault(c, base)
    return {c: d for c, d in found.items() if os.access(d, os.W_OK)}


def _write(folder: str, name: str, value: str) -> bool:
    try:
        with open(os.path.join(folder, name), "w") as f:
            f.write(value)
        return True
    except OSError:
        return False


def _apply(folder: str, controller: str, limits: Limits, v2: bool) -> bool:
    if controller == "pids":
        return _write(folder, "pids.max", str(limits.pids))
    if controller == "memory":
        size = str((limits.memory_mb or 0) << 20)
        if v2:
            ok = _write(folder, "memory.max", size)
            _write(folder, "memory.swap.max", "0")
            return ok
        ok = _write(folder, "memory.limit_in_bytes", size)
        _write(folder, "memory.memsw.limit_in_bytes", size)  # no swap beyond it, where swap is accounted
        return ok
    quota = str(max(1000, int((limits.cpus or 0) * _CPU_PERIOD_US)))
    if v2:
        return _write(folder, "cpu.max", f"{quota} {_CPU_PERIOD_US}")
    return _write(folder, "cpu.cfs_period_us", str(_CPU_PERIOD_US)) and _write(folder, "cpu.cfs_quota_us", quota)


class SandboxCgroup:
    """The cgroup folders of one sandbox (one per v1 controller, or one v2 folder)."""

    def __init__(self, folders: list[str], enforced: list[str]) -> None:
        self.folders = folders
        self.enforced = enforced

    @classmethod
    def create(cls, name: str, limits: Limits) -> SandboxCgroup | None:
        """The sandbox's cgroup with each wanted limit set, or None when none can be enforced here."""
        wanted = limits.wanted()
        parents = parent_dirs()
        made: dict[str, str] = {}  # folder -> is it v2 ("2") or v1 ("1")
        enforced: list[str] = []
        for c in wanted:
            parent = parents.get(c)
            if parent is None:
                continue
            folder = os.path.join(parent, PREFIX + name)
            if folder not in made:
                try:
                    os.mkdir(folder)
                except OSError:
                    continue
                made[folder] = "2" if os.path.exists(os.path.join(folder, "cgroup.controllers")) else "1"
            if _apply(folder, c, limits, made[folder] == "2"):
                enforced.append(c)
        missing = [c for c in wanted if c not in enforced]
        if missing:
            key = ",".join(missing)
            if key not in _warned:
                _warned.add(key)
                log.warning(
                    "sandbox limits not enforced on this host (no writable cgroup controller): %s", ", ".join(missing)
                )
        group = cls(list(made), enforced)
        if not enforced:
            group.remove()
            return None
        return group

    def oom_kills(self) -> int:
        """Processes the kernel killed for the memory limit so far (v1 memory.oom_control, v2 memory.events)."""
        if "memory" not in self.enforced:
            return 0
        for folder in self.folders:
            for name in ("memory.events", "memory.oom_control"):
                for line in _lines(os.path.join(folder, name)):
                    key, _, value = line.partition(" ")
                    if key == "oom_kill" and value.strip().isdigit():
                        return int(value)
        return 0

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` run by a shell that first moves itself into the cgroup (then execs it: same pid)."""
        joins = "".join(f"echo $$ > {shlex.quote(os.path.join(d, 'cgroup.procs'))} || exit 125; " for d in self.folders)
        return ["/bin/sh", "-c", joins + 'exec "$@"', "sh", *argv]

    def remove(self, wait_s: float = 2.0) -> None:
        """Remove the folders once their processes are gone (the kernel may take a moment to reap a
        killed PID namespace); one still busy after `wait_s` is left for the sweep."""
        deadline = time.monotonic() + wait_s
        for folder in self.folders:
            while True:
                try:
                    os.rmdir(folder)
                    break
                except OSError as e:
                    if e.errno != errno.EBUSY or time.monotonic() > deadline:
                        break
                    time.sleep(0.01)


def sweep() -> int:
    """Remove leftover sandbox cgroups (empty, older than a minute) under this runner's cgroups."""
    removed = 0
    for parent in set(parent_dirs().values()):
        try:
            entries = [e for e in os.scandir(parent) if e.name.startswith(PREFIX) and e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for entry in entries:
            try:
                with open(os.path.join(entry.path, "cgroup.procs")) as f:
                    if f.read().strip():
                        continue
                if time.time() - entry.stat().st_mtime < _STALE_AFTER_S:
                    continue
                os.rmdir(entry.path)
                removed += 1
            except OSError:
                continue
    return removed
