"""One writer per output folder: a second `mimoagent` on the same `-o` stops with the holder's name.

The lock is an `flock` on `<output>/.mimoagent.lock` and one on the folder itself (so removing the lock
file by hand lets no second run in), which the kernel drops when their holder dies, so a lock left by a
killed run is stale by construction and the next run takes it. results.jsonl does not rely on either:
its writers lock the results file itself (results.py). The lock file also holds who took it (pid, host,
run id, start time) for the error message; it is emptied when the run ends.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mimo_core.errors import MimoError

LOCK_FILE = ".mimoagent.lock"


class OutputLocked(MimoError):
    """Another live mimoagent process writes to this output folder."""


def _holder(path: Path) -> dict[str, Any]:  # the lock file's JSON
    try:
        data = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _describe(holder: dict[str, Any]) -> str:
    if not holder:
        return "another mimoagent process"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(holder.get("started", 0) or 0)))
    return f"mimoagent pid {holder.get('pid')} on host {holder.get('host')} (run {holder.get('run_id')}, since {since})"


def _lock_folder(output: Path) -> int | None:
    """An flock on the output folder itself, which no one deletes by accident as they might the lock
    file: a second run is refused even when `.mimoagent.lock` was removed by hand. None where the file
    system does not lock folders (NFS emulates flock with locks that need a writable file)."""
    fd = os.open(output, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise
    except OSError:
        os.close(fd)
        return None
    return fd


@contextmanager
def output_lock(output: Path, run_id: str) -> Iterator[None]:
    """Hold the output folder's lock for the duration of a run; raise OutputLocked if a live run holds it."""
    output.mkdir(parents=True, exist_ok=True)
    path = output / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    folder_fd: int | None = None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            folder_fd = _lock_folder(output)
        except BlockingIOError:
            raise OutputLocked(
                f"-o {output}: in use by {_describe(_holder(path))}; wait for it to finish "
                "or choose another output folder"
            ) from None
        record = {"pid": os.getpid(), "host": socket.gethostname(), "run_id": run_id, "started": time.time()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the flocks
        if folder_fd is not None:
            os.close(folder_fd)
