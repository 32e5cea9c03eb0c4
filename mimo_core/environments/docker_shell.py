"""A persistent shell in a container: one `docker exec -i bash` whose attach socket stays open.

The protocol is shell.py's; this module only opens the stream. Writing to the hijacked socket feeds the
shell's stdin; what comes back is docker's multiplexed stream (8-byte frame headers), of which only
stdout is the shell's (its stderr is not attached).
"""

from __future__ import annotations

import contextlib
import shlex
import time
from typing import Any

from mimo_core.errors import SandboxError

_OPEN_TIMEOUT = 60.0


class DockerShellStream:
    def __init__(self, container: Any, sock: Any) -> None:
        self.container = container
        self.sock = sock
        self.raw = getattr(sock, "_sock", sock)
        self.buf = bytearray()
        self.pid = ""  # the shell's pid inside the container, for close()
        self.closed = False

    def send(self, data: bytes) -> None:
        self.raw.sendall(data)

    def recv(self, timeout: float) -> bytes | None:
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
            kind, payload = self.buf[0], bytes(self.buf[8:8 + size])
            del self.buf[:8 + size]
            if kind == 1 and payload:
                return payload
        return None

    def read_line(self, timeout: float) -> str:
        data = bytearray()
        deadline = time.monotonic() + timeout
        while b"\n" not in data:
            chunk = self.recv(max(0.0, deadline - time.monotonic()))
            if not chunk:
                raise SandboxError("the container's shell did not start")
            data += chunk
        line, _, rest = bytes(data).partition(b"\n")
        self.buf[:0] = _frames(rest)  # put back what followed the line
        return line.decode(errors="replace")

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.pid.isdigit():
            with contextlib.suppress(Exception):
                self.container.exec_run(["kill", "-9", self.pid])
        with contextlib.suppress(Exception):
            self.sock.close()


def _frames(data: bytes) -> bytes:
    """Re-wrap bytes as one stdout frame (to push them back in front of the buffer)."""
    return b"\x01\x00\x00\x00" + len(data).to_bytes(4, "big") + data if data else b""


def open_shell(client: Any, container: Any, cwd: str) -> DockerShellStream:
    """Start `bash --noprofile --norc` in the container with stdin attached, in `cwd` if it exists."""
    import docker.errors

    api = client.api
    # sh prints its pid, which bash keeps by exec: bash itself reads no line before the session's own.
    script = f"cd -- {shlex.quote(cwd)} 2>/dev/null; echo $$; exec bash --noprofile --norc 2>/dev/null"
    try:
        exec_id = api.exec_create(container.id, ["sh", "-c", script], stdin=True, stdout=True, stderr=False,
                                  tty=False)["Id"]
        sock = api.exec_start(exec_id, socket=True)
    except docker.errors.APIError as e:
        raise SandboxError(f"container {container.name} cannot start a shell: {e.explanation or e}") from None
    stream = DockerShellStream(container, sock)
    stream.pid = stream.read_line(_OPEN_TIMEOUT).strip()
    return stream


def kill_script(needle: str, holding: str = "", spare: str = "") -> str:
    """`sh` code that SIGKILLs every process of the container whose environment holds `needle` or that
    holds the file `holding` open (a subshell that never exec'd), sparing PID 1, `spare` (the shell) and
    itself; scanned again while a pass found something, so the killed are gone when it returns."""
    q_needle, q_out = shlex.quote(needle), shlex.quote(holding)
    spare = spare if spare.isdigit() else "0"
    fds = (f"[ $h = 0 ] && [ -e {q_out} ] && for f in $p/fd/*; do [ $f -ef {q_out} ] && h=1 && break; done; "
           if holding else "")
    return (f"for r in 1 2 3 4 5; do k=0; for p in /proc/[0-9]*; do i=${{p#/proc/}}; "
            f"[ $i = 1 ] || [ $i = {spare} ] || [ $i = $$ ] && continue; h=0; "
            f"grep -qsF {q_needle} $p/environ && h=1; {fds}"
            "[ $h = 1 ] && kill -9 $i 2>/dev/null && k=1; done; [ $k = 0 ] && break; done; true")
