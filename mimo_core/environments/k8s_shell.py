"""A persistent shell in a pod: one exec stream whose stdin stays open (shell.py's ShellStream).

The protocol is shell.py's; this module only reads the exec's stdout frames. The shell's stderr is
discarded by the shell itself (`exec bash ... 2>/dev/null`), so only channel 1 carries the session.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from mimo_core.environments.k8s_exec import ENDED, STDOUT, ExecStream
from mimo_core.errors import SandboxError


class K8sShellStream:
    """A `bash` reading the exec stream's stdin: shell.py's ShellStream over one WebSocket."""

    def __init__(self, env: Any, stream: ExecStream) -> None:
        self.env = env
        self.stream = stream
        self.pid = ""
        self.pending = b""  # bytes read past a line by read_line
        self.closed = False

    def send(self, data: bytes) -> None:
        try:
            self.stream.send(data)
        except Exception:
            self.stream.ended = True

    def recv(self, timeout: float) -> bytes | None:
        if self.pending:
            data, self.pending = self.pending, b""
            return data
        deadline = time.monotonic() + timeout
        while True:
            got = self.stream.frame(max(0.0, deadline - time.monotonic()))
            if got is None:
                return None
            channel, payload = got
            if channel == ENDED:
                return b""
            if channel == STDOUT and payload:
                return payload
            if time.monotonic() >= deadline:
                return None

    def read_line(self, timeout: float) -> str:
        data = bytearray()
        deadline = time.monotonic() + timeout
        while b"\n" not in data:
            chunk = self.recv(max(0.0, deadline - time.monotonic()))
            if not chunk:
                raise SandboxError("the pod's shell did not start")
            data += chunk
        line, _, rest = bytes(data).partition(b"\n")
        self.pending = rest
        return line.decode(errors="replace")

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.pid.isdigit() and not self.stream.ended:
            with contextlib.suppress(Exception):
                self.env.exec_bytes(f"kill -9 {self.pid}", timeout=10)
        self.stream.close()
