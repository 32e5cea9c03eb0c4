"""Host-side process plumbing of the local backend: shell streams over file descriptors, killing by marker.

Every process a local sandbox starts carries `MIMO_SANDBOX=<id>` in its environment, and every call of a
persistent shell `MIMO_CALL=<nonce>`. Children inherit both, also after `setsid`/`nohup`/double forks,
so scanning `/proc/*/environ` finds a sandbox's (or a call's) processes wherever they went. Only
processes carrying OUR marker are ever signalled.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
from collections.abc import Callable
from typing import BinaryIO

from mimo_core.environments.local.safe_files import open_regular
from mimo_core.environments.shell import MAX_CAPTURE

SANDBOX_VAR = "MIMO_SANDBOX"
CALL_VAR = "MIMO_CALL"


def marked_pids(name: str, value: str, holding: str | None = None, spare: int | None = None) -> list[int]:
    """Pids of this host's (or this PID namespace's) processes whose environment holds name=value, or
    that hold the file `holding` open (a subshell that never exec'd has the environment its shell started
    with, not the marker; so does a child between fork and exec). `spare` (the shell itself) is left out."""
    needle = f"{name}={value}".encode()
    target = _file_id(holding)
    me = os.getpid()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid in (me, spare):
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:  # gone, or not ours to read
            continue
        if needle in environ or (
            target and any(v.startswith(_SANDBOX_PREFIX) for v in environ) and _holds(pid, target)
        ):
            found.append(pid)
    return found


_SANDBOX_PREFIX = SANDBOX_VAR.encode() + b"="


def _file_id(path: str | None) -> tuple[int, int] | None:
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _holds(pid: int, target: tuple[int, int]) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            st = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == target:
            return True
    return False


def kill_marked(name: str, value: str, holding: str | None = None, spare: int | None = None, rounds: int = 5) -> int:
    """SIGKILL every process `marked_pids` finds; repeat while new ones appear (a fork racing the scan).
    Returns how many were signalled."""
    killed = 0
    for _ in range(rounds):
        pids = marked_pids(name, value, holding, spare)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
    return killed


def read_capture(path: str) -> bytes:
    """A call's output file (head and tail halves when it is huge), then removed; b"" if absent. Never
    through a link or a FIFO the sandbox put in its place (safe_files.py)."""
    try:
        f = os.fdopen(open_regular(path), "rb")
    except FileNotFoundError:
        return b""
    except OSError:  # a link, FIFO or folder where the output file should be: not read, removed
        try:
            os.unlink(path)
        except OSError:
            pass
        return b"[mimoagent: the command's output file was replaced by something that is not a file]\n"
    with f:
        try:
            os.unlink(path)
        except OSError:
            pass
        return capture_file(f)


def capture_file(f: BinaryIO) -> bytes:
    """All of an open file, or its head and tail halves with the count of bytes dropped between."""
    size = os.fstat(f.fileno()).st_size
    f.seek(0)
    if size <= MAX_CAPTURE:
        return f.read()
    half = MAX_CAPTURE // 2
    head = f.read(half)
    f.seek(size - half)
    return head + f"\n[... {size - 2 * half} bytes of output dropped ...]\n".encode() + f.read()


class FdStream:
    """A shell stream over two file descriptors (pipes of a child, or FIFOs into a bwrap sandbox)."""

    def __init__(self, write_fd: int, read_fd: int, kill: Callable[[], None], pid: str = "") -> None:
        self.pid = pid  # the shell's pid as its sandbox sees it
        self.write_fd = write_fd
        self.read_fd = read_fd
        self._kill = kill
        self._poll = select.poll()
        self._poll.register(read_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        self.closed = False

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self.write_fd, view)
            view = view[n:]

    def recv(self, timeout: float) -> bytes | None:
        if not self._poll.poll(max(0, int(timeout * 1000) + 1)):
            return None
        return os.read(self.read_fd, 65536)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._kill()
        for fd in (self.write_fd, self.read_fd):
            try:
                os.close(fd)
            except OSError:
                pass


def popen_stream(argv: list[str], cwd: str, env: dict[str, str]) -> FdStream:
    """A shell started as our own child: stdin/stdout pipes, stderr discarded, its own session."""
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        start_new_session=True,
        bufsize=0,
    )
    assert proc.stdin is not None and proc.stdout is not None
    write_fd, read_fd = os.dup(proc.stdin.fileno()), os.dup(proc.stdout.fileno())
    proc.stdin.close()
    proc.stdout.close()

    def kill() -> None:
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    return FdStream(write_fd, read_fd, kill, str(proc.pid))
