"""A sandbox's budgets, enforced while it runs: a watchdog thread per sandbox that ends it at the first
sign of an exceeded budget, and says which (docs/sandboxes.md, "Budgets").

The memory budget is the kernel's (a cgroup's limit, docker's `mem_limit`, a pod's limit): the watchdog
only notices that the kernel had to kill a process of the sandbox for it (an OOM kill). The disk budget
is the watchdog's own: the sandbox's files (its folders on the host, a container's writable layer) are
measured every few seconds, and past `storage_mb` the sandbox is ended. Either way the rollout ends as
the agent's failure (reward 0, the reason in its record, `blame.BudgetExceeded`), never as an
infrastructure error: retrying would replay the same choice.

A writer faster than the watchdog gets past the disk budget by what it writes between two measures (a
few seconds of the disk's speed); the host's own low-water mark (`environment.host_min_free_mb`, checked
before each rollout starts) is what keeps the run's disk from filling.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("mimoagent.budgets")

MiB = 1 << 20
INODE_BYTES = 1024  # what each file or folder costs beyond its blocks (millions of empty files fill a disk too)


@dataclass(frozen=True)
class Exceeded:
    """A budget the sandbox went past: `kind` (memory, disk) and what was seen, for the record."""

    kind: str
    detail: str


def memory_exceeded(limit_mb: int | None, oom_kills: int) -> Exceeded | None:
    if oom_kills <= 0:
        return None
    return Exceeded(
        "memory",
        f"the sandbox went past its memory budget ({limit_mb} MB; its private /tmp and "
        f"/dev/shm count) and the kernel killed {oom_kills} of its processes",
    )


def disk_exceeded(limit_mb: int | None, used: int) -> Exceeded | None:
    if not limit_mb or used <= limit_mb * MiB:
        return None
    return Exceeded("disk", f"the sandbox's files took {used // MiB} MB, past its disk budget ({limit_mb} MB)")


def tree_usage(path: str, timeout: float = 120.0) -> int | None:
    """Bytes a folder's files take on disk (allocated blocks, a sparse file's holes free, hard links once)
    plus INODE_BYTES per entry, measured by `du` on one filesystem; None when it cannot be measured."""
    try:
        blocks = subprocess.run(["du", "-s", "-x", "-B1", path], capture_output=True, timeout=timeout, check=False)
        inodes = subprocess.run(["du", "-s", "-x", "--inodes", path], capture_output=True, timeout=timeout, check=False)
        return int(blocks.stdout.split()[0]) + INODE_BYTES * int(inodes.stdout.split()[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


_FALLOC_FL_KEEP_SIZE, _FALLOC_FL_PUNCH_HOLE = 0x01, 0x02
_libc = None


def punch_middle(path: str, keep: int) -> int:
    """Free the middle of a growing output file on disk, keeping its first and last `keep` bytes (what
    is read of it: `procs.capture_file`); its size stays, so the count of dropped bytes stays right.
    Bytes freed (0 when nothing was, or the filesystem cannot punch holes)."""
    global _libc
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return 0
    try:
        st = os.fstat(fd)
        if st.st_mode & 0o170000 != 0o100000 or st.st_blocks * 512 <= 4 * keep:
            return 0
        block = 1 << 16
        start = -(-keep // block) * block
        end = (st.st_size - keep) // block * block
        if end <= start:
            return 0
        if _libc is None:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        rc = _libc.fallocate(
            fd, _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE, ctypes.c_long(start), ctypes.c_long(end - start)
        )
        return end - start if rc == 0 else 0
    except (OSError, AttributeError):
        return 0
    finally:
        os.close(fd)


class BudgetWatch:
    """The watchdog of one sandbox. `check()` returns what is exceeded (or None); `end()` ends the sandbox
    (any thread). `tick()`, cheap, runs every `interval`; `check()` runs at least `every` seconds apart,
    further when one measure took long (a tree of millions of files)."""

    def __init__(
        self,
        name: str,
        check: Callable[[], Exceeded | None],
        end: Callable[[], None],
        tick: Callable[[], None] | None = None,
        interval: float = 0.25,
        every: float = 2.0,
    ) -> None:
        self.name, self._check, self._end, self._tick = name, check, end, tick
        self.interval, self.every = interval, every
        self.exceeded: Exceeded | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=f"budget-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=30)

    def check_now(self) -> Exceeded | None:
        """Measure now (the rollout asks after a failure: was it a budget?); ends the sandbox if exceeded."""
        with self._lock:
            if self.exceeded is None:
                try:
                    found = self._check()
                except Exception:  # a sandbox going away under the check: nothing seen
                    log.debug("budget check of %s failed", self.name, exc_info=True)
                    found = None
                if found is not None:
                    self.exceeded = found
                    log.warning("sandbox %s: %s; ending it", self.name, found.detail)
                    try:
                        self._end()
                    except Exception:
                        log.debug("ending sandbox %s failed", self.name, exc_info=True)
            return self.exceeded

    def _loop(self) -> None:
        due = 0.0
        while not self._stop.wait(self.interval):
            if self._tick is not None:
                try:
                    self._tick()
                except Exception:
                    log.debug("budget tick of %s failed", self.name, exc_info=True)
            now = time.monotonic()
            if now < due:
                continue
            if self.check_now() is not None:
                return
            took = time.monotonic() - now
            due = time.monotonic() + max(self.every, 5 * took)
