"""The host end of a persistent shell in a container: whatever the transport, a stream of the shell's
stdout payloads, one line (the shell's pid) read first, and a kill of that pid on close."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from mimo_core.errors import SandboxError


class ContainerShellStream:
    """shell.py's ShellStream over a transport; subclasses provide `send`, `_recv` and `_close`."""

    def __init__(self, env: Any) -> None:
        self.env = env  # a ContainerEnvironment: its exec_bytes kills the shell on close
        self.pid = ""  # the shell's pid inside the container
        self.pending = b""  # bytes read past a line by read_line
        self.closed = False

    def send(self, data: bytes) -> None:
        raise NotImplementedError

    def _recv(self, timeout: float) -> bytes | None:
        """The next stdout payload; None when nothing came in time, b"" when the stream ended."""
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError

    def _ended(self) -> bool:
        return False

    def recv(self, timeout: float) -> bytes | None:
        if self.pending:
            data, self.pending = self.pending, b""
            return data
        return self._recv(timeout)

    def read_line(self, timeout: float) -> str:
        data = bytearray()
        deadline = time.monotonic() + timeout
        while b"\n" not in data:
            chunk = self.recv(max(0.0, deadline - time.monotonic()))
            if not chunk:
                raise SandboxError(f"the shell in {self.env._where()} did not start")
            data += chunk
        line, _, rest = bytes(data).partition(b"\n")
        self.pending = rest
        return line.decode(errors="replace")

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.pid.isdigit() and not self._ended():
            with contextlib.suppress(Exception):
                self.env.exec_bytes(f"kill -9 {self.pid}", timeout=10)
        with contextlib.suppress(Exception):
            self._close()


def shell_command(cwd: str) -> list[str]:
    """The shell's command line: `sh` prints its pid, which bash keeps by exec, so bash itself reads no
    line before the session's own; in `cwd` if it exists."""
    import shlex

    return ["sh", "-c", f"cd -- {shlex.quote(cwd)} 2>/dev/null; echo $$; exec bash --noprofile --norc 2>/dev/null"]
