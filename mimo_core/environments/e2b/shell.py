"""A persistent shell in an E2B sandbox: one envd process started with stdin open (shell.py's ShellStream).

What the host writes goes in by envd's SendInput; the shell's stdout comes back on the process' stream
(its stderr is discarded by the shell itself). The SDK hands output over as text; the protocol's markers
are ASCII, so reading them back as UTF-8 loses nothing of the framing.
"""

from __future__ import annotations

import contextlib
import queue
from typing import Any

from mimo_core.environments.container.shell_stream import ContainerShellStream, shell_command
from mimo_core.environments.e2b import commands


class E2BShellStream(ContainerShellStream):
    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.chunks: queue.Queue = queue.Queue()
        self.handle: Any = None
        self.done: queue.Queue | None = None
        self.ended = False

    def send(self, data: bytes) -> None:
        try:
            self.env._require().commands.send_stdin(self.handle.pid, data)
        except Exception:
            self.ended = True
            self.chunks.put(b"")

    def _recv(self, timeout: float) -> bytes | None:
        if self.ended and self.chunks.empty():
            return b""  # the stream ended: every later read says so at once
        try:
            return self.chunks.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None

    def _ended(self) -> bool:
        return self.ended or (self.done is not None and not self.done.empty())

    def _close(self) -> None:
        with contextlib.suppress(Exception):
            self.handle.kill()


def open_shell(env: Any, cwd: str) -> E2BShellStream:
    stream = E2BShellStream(env)
    stream.handle, thread, stream.done = commands.start(
        env._require(),
        shell_command(cwd),
        env.options.user,
        envs=dict(env.spec.env),
        stdin=True,
        on_stdout=lambda s: stream.chunks.put(s.encode()),
    )

    def ended() -> None:
        thread.join()
        stream.ended = True
        stream.chunks.put(b"")

    import threading

    threading.Thread(target=ended, name="e2b-shell-end", daemon=True).start()
    stream.pid = stream.read_line(60.0).strip()
    return stream
