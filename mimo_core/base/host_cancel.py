"""A stop that long host-side work notices: copying a repository, building its base commit.

A sandbox's commands are killed when a run stops (`environments.live.interrupt_all`), but a copy or a
`git add` of a big repository on the host runs in the rollout's own thread, where nothing kills it: a
SIGTERM waited for it, and a second one left a half-made copy behind. `run_one` names its cancel event
here (`cancellable`); the copy checks it before every file and a host command is polled, so either ends
within a fraction of a second of the stop, with `Stopped` (status `interrupted`).
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from mimo_core.errors import DatasetError, MimoError
from mimo_core.status import ExitStatus

_cancel: ContextVar[threading.Event | None] = ContextVar("mimo_cancel", default=None)
POLL_S = 0.1


class Stopped(MimoError):
    """The run was stopped while this rollout was setting up."""

    status = ExitStatus.INTERRUPTED


@contextmanager
def cancellable(cancel: threading.Event | None) -> Iterator[None]:
    """Work done in this thread (and in this context) inside the block stops when `cancel` is set."""
    token = _cancel.set(cancel)
    try:
        yield
    finally:
        _cancel.reset(token)


def stop_requested() -> bool:
    cancel = _cancel.get()
    return cancel is not None and cancel.is_set()


def check_stop(what: str) -> None:
    if stop_requested():
        raise Stopped(f"the run was stopped during {what}")


def _copy_file(src: str, dest: str) -> str:
    check_stop("the repository copy")
    mode = os.lstat(src).st_mode
    if not stat.S_ISREG(mode):  # a FIFO blocks the copy forever, a device reads forever
        raise DatasetError(f"the repository holds {src}, which is not a regular file, a folder or a link")
    return shutil.copy2(src, dest)


def copy_tree(src: Path | str, dest: Path | str) -> None:
    """`shutil.copytree` (links kept as links, into an existing `dest`) that stops when the run does and
    refuses special files."""
    shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True, copy_function=_copy_file)


def run_stoppable(argv: list[str], what: str, **popen: Any) -> subprocess.CompletedProcess[bytes]:
    """`subprocess.run(argv, capture_output=True)`, killed (its whole process group) when the run stops."""
    check_stop(what)
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **popen
    ) as proc:
        out: list[bytes] = []
        err: list[bytes] = []
        readers = [
            threading.Thread(target=lambda s=s, b=b: b.append(s.read()), daemon=True)
            for s, b in ((proc.stdout, out), (proc.stderr, err))
        ]
        for r in readers:
            r.start()
        while True:
            try:
                proc.wait(POLL_S)
                break
            except subprocess.TimeoutExpired:
                if stop_requested():
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    proc.wait()
                    raise Stopped(f"the run was stopped during {what}") from None
        for r in readers:
            r.join()
    return subprocess.CompletedProcess(argv, proc.returncode, b"".join(out), b"".join(err))
