"""Measure a command from outside, over its whole process tree: the runner and every process it starts.

`run_tree` starts the command, waits for it with `os.wait4` (whose rusage covers the process and every
descendant that was reaped inside the tree), then reaps the descendants that outlived their parents: this
process is made a child subreaper, so orphans of the tree are handed to us instead of to init and their
CPU is counted too. `tree_cpu` reads the live tree's CPU from /proc (used by the scripted server to note
the CPU spent so far at each request; `pidfile` tells it the runner's pid).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
_CLK_TCK = os.sysconf("SC_CLK_TCK")
_subreaper = False


@dataclass
class TreeRun:
    """CPU (user + system) and peak RSS of the whole tree; times on the system-wide monotonic clock."""

    returncode: int
    cpu_s: float
    maxrss_mb: float
    started: float  # monotonic, just before the spawn
    exited: float  # monotonic, when the runner itself was reaped
    tree_exited: float  # monotonic, when its last descendant was reaped
    leftovers: int  # descendants still running `orphan_wait` seconds after the runner exited (not counted)
    stdout: str
    stderr: str


def _become_subreaper() -> None:
    global _subreaper
    if not _subreaper:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
        _subreaper = True


def _cpu(ru: object) -> float:
    return ru.ru_utime + ru.ru_stime  # type: ignore[attr-defined]


def _orphans(exclude: set[int]) -> list[int]:
    """Our children that we did not start ourselves: descendants of a measured tree handed to us."""
    return [pid for pid in children_of(os.getpid()) if pid not in exclude]


def run_tree(
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    keep: set[int],
    timeout: float = 1800,
    orphan_wait: float = 10.0,
    pidfile: Path | None = None,
) -> TreeRun:
    """Run `argv` to completion and account for its whole tree. `keep`: pids of our own other children
    (e.g. the scripted server), never reaped here. Output goes to files, so no pipe can stall the tree."""
    _become_subreaper()
    out_path, err_path = cwd / f".tree-{time.monotonic_ns()}.out", cwd / f".tree-{time.monotonic_ns()}.err"
    with out_path.open("w") as out, err_path.open("w") as err:
        started = time.monotonic()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        if pidfile is not None:
            pidfile.write_text(str(proc.pid))
        deadline = started + timeout
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
            time.sleep(0.002)
    exited = time.monotonic()
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu, rss = _cpu(ru), ru.ru_maxrss
    tree_exited, pending = exited, set(_orphans(keep | {proc.pid}))
    until = exited + orphan_wait
    while pending and time.monotonic() < until:
        for child in list(pending):
            pid, _, cru = os.wait4(child, os.WNOHANG)
            if pid:
                pending.discard(child)
                cpu, rss, tree_exited = cpu + _cpu(cru), max(rss, cru.ru_maxrss), time.monotonic()
        pending |= set(_orphans(keep | {proc.pid}))  # a reaped orphan's own children come to us next
        time.sleep(0.005)
    stdout, stderr = out_path.read_text(), err_path.read_text()
    out_path.unlink()
    err_path.unlink()
    return TreeRun(proc.returncode, cpu, rss / 1024, started, exited, tree_exited, len(pending), stdout, stderr)


def tree_cpu(root: int) -> float:
    """CPU seconds of `root` and its live descendants so far, reaped descendants included (/proc ticks)."""
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or not (rest := stat_fields(int(entry.name))):
            continue
        pid = int(entry.name)
        parent[pid] = int(rest[1])
        ticks[pid] = sum(int(x) for x in rest[11:15])  # utime stime cutime cstime
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    total, frontier = 0, [root]
    while frontier:
        p = frontier.pop()
        total += ticks.get(p, 0)
        frontier.extend(children.get(p, ()))
    return total / _CLK_TCK


def stat_fields(pid: int) -> list[str]:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return stat[stat.rfind(")") + 2 :].split()


def cpu_ticks(pid: int) -> int:
    """utime + stime + cutime + cstime (its reaped children: the forks that recorded runs)."""
    fields = stat_fields(pid)
    return sum(int(x) for x in fields[11:15]) if fields else 0


def children_of(pid: int) -> list[int]:
    return [
        int(e.name)
        for e in os.scandir("/proc")
        if e.name.isdigit() and (f := stat_fields(int(e.name))) and int(f[1]) == pid
    ]
