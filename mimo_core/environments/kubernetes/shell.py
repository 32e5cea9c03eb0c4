"""A persistent shell in a pod: one exec stream whose stdin stays open (shell.py's ShellStream).

The protocol is shell.py's; this module only reads the exec's stdout frames. The shell's stderr is
discarded by the shell itself (`exec bash ... 2>/dev/null`), so only channel 1 carries the session.
"""

from __future__ import annotations

import time
from typing import Any

from mimo_core.environments.container.shell_stream import ContainerShellStream, shell_command
from mimo_core.environments.kubernetes.exec import ENDED, STDOUT, ExecStream


class K8sShellStream(ContainerShellStream):
    """A `bash` reading the exec stream's stdin: shell.py's ShellStream over one WebSocket."""

    def __init__(self, env: Any, stream: ExecStream) -> None:
        super().__init__(env)
        self.stream = stream

    def send(self, data: bytes) -> None:
        try:
            self.stream.send(data)
        except Exception:
            self.stream.ended = True

    def _recv(self, timeout: float) -> bytes | None:
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

    def _ended(self) -> bool:
        return self.stream.ended

    def _close(self) -> None:
        self.stream.close()


def open_shell(env: Any, cwd: str) -> K8sShellStream:
    stream = K8sShellStream(env, env.open(shell_command(cwd)))
    stream.pid = stream.read_line(60.0).strip()
    return stream
