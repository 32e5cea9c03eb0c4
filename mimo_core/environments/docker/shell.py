"""A persistent shell in a container: one `docker exec -i bash` whose attach socket stays open.

The protocol is shell.py's; this module only opens the stream. Writing to the hijacked socket feeds the
shell's stdin; what comes back is docker's multiplexed stream (8-byte frame headers), of which only
stdout is the shell's (its stderr is not attached).
"""

from __future__ import annotations

import time
from typing import Any

from mimo_core.environments.container.shell_stream import ContainerShellStream, shell_command
from mimo_core.errors import SandboxError

_OPEN_TIMEOUT = 60.0


class DockerShellStream(ContainerShellStream):
    def __init__(self, env: Any, sock: Any) -> None:
        super().__init__(env)
        self.sock = sock
        self.raw = getattr(sock, "_sock", sock)
        self.buf = bytearray()

    def send(self, data: bytes) -> None:
        self.raw.sendall(data)

    def _recv(self, timeout: float) -> bytes | None:
        deadline = time.monotonic() + timeout
        while True:
            payload = self._frame()
            if payload is not None:
                return payload
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.raw.settimeout(remaining)
            try:
                chunk = self.raw.recv(65536)
            except TimeoutError:
                return None
            except OSError:
                return b""
            if not chunk:
                return b""
            self.buf += chunk

    def _frame(self) -> bytes | None:
        """The next stdout payload in the buffer (other streams skipped), or None if incomplete."""
        while len(self.buf) >= 8:
            size = int.from_bytes(self.buf[4:8], "big")
            if len(self.buf) < 8 + size:
                return None
            kind, payload = self.buf[0], bytes(self.buf[8 : 8 + size])
            del self.buf[: 8 + size]
            if kind == 1 and payload:
                return payload
        return None

    def _close(self) -> None:
        self.sock.close()


def open_shell(env: Any, cwd: str) -> DockerShellStream:
    """Start `bash --noprofile --norc` in the container with stdin attached, in `cwd` if it exists."""
    import docker.errors

    container = env._require()
    api = env.client.api
    try:
        exec_id = api.exec_create(container.id, shell_command(cwd), stdin=True, stdout=True, stderr=False, tty=False)[
            "Id"
        ]
        sock = api.exec_start(exec_id, socket=True)
    except docker.errors.APIError as e:
        raise SandboxError(f"container {container.name} cannot start a shell: {e.explanation or e}") from None
    stream = DockerShellStream(env, sock)
    stream.pid = stream.read_line(_OPEN_TIMEOUT).strip()
    return stream
