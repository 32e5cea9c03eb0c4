"""A persistent bash shell fed over a byte stream: one protocol for every backend.

A backend only has to open a stream to a fresh `bash --noprofile --norc` inside its sandbox (a local
pipe, a FIFO pair inside bubblewrap, a `docker exec` socket, a Kubernetes exec websocket) and kill the
processes that carry a marker in their environment. Everything else lives here.

Each call is ONE top-level line written to the shell's stdin:

    MIMO_CALL=<nonce>; export MIMO_CALL; eval $'<command>' </dev/null >OUT 2>&1;
    printf '\\036<nonce> %d %s\\n' "$?" "$PWD"; unset MIMO_CALL

* `eval` at top level, so `cd`, `export`, variables, functions, `set -o` options and traps persist exactly
  as in a terminal; a syntax error is reported as `bash: eval: line N: ...` with the model's own line
  numbers and nothing of this wrapper.
* stdin is /dev/null (a command that reads stdin cannot eat the protocol); output goes to a fresh file
  per call, so a background job that keeps writing can never hold a call or leak into the stream.
* the marker line carries the exit status and the working directory; the nonce is new each call.
* every process of the call inherits `MIMO_CALL=<nonce>` (once it execs) and the call's output file (as
  it forks): a timeout kills the processes carrying either, also ones that called `setsid` and subshells
  that never exec, but never the shell or a server an earlier call left running.
* the shell's own stderr is discarded, so `set -x`/`set -v` trace the model's command (inside OUT) but
  never this wrapper. An EXIT trap reports the status and directory when the model runs `exit`; the
  session then starts a new shell in that directory and says so in the result.
"""

from __future__ import annotations

import os
import re
import secrets
import threading
import time
from collections.abc import Callable
from typing import Protocol

from pydantic import BaseModel

from mimo_core.errors import SandboxError

MAX_CAPTURE = 8 * 1024 * 1024  # bytes of output kept per call: head and tail halves
KILL_GRACE = 3.0  # seconds a killed call has to print its marker before the shell itself is replaced
_RS = b"\x1e"  # record separator starting every protocol line
_INLINE_MAX = 512  # bytes of command sent inside the call's line; longer ones follow it (see _line)
_ERROR_LINE = re.compile(rb"^bash: (?:eval: )?line (\d+):", re.M)


class ShellStream(Protocol):
    """A bash process inside the sandbox: stdin to write, stdout to read. Its stderr is discarded."""

    pid: str  # the shell's pid as seen inside the sandbox: spared when a call's processes are killed

    def send(self, data: bytes) -> None: ...

    def recv(self, timeout: float) -> bytes | None:
        """Some bytes; b"" once the shell is gone; None if nothing came within `timeout`."""
        ...

    def close(self) -> None:
        """Kill the shell process (not what it started) and release the stream. Idempotent."""
        ...


class ShellHost(Protocol):
    """What a backend provides to a session."""

    scratch_dir: str  # sandbox path for the per-call output files
    inline_output: bool  # True: the shell prints each call's output file into the stream (no host view)

    def open_shell_stream(self, cwd: str) -> ShellStream: ...

    def kill_call(self, nonce: str, out: str, shell_pid: str) -> None:
        """SIGKILL every process of one call: those whose environment holds `MIMO_CALL=<nonce>` and those
        holding its output file `out` open (subshells that never exec'd), except the shell itself."""
        ...

    def read_output(self, path: str) -> bytes:
        """A call's output file (head+tail capped), then removed; b"" if it does not exist."""
        ...


class ShellResult(BaseModel):
    output: str
    returncode: int
    timed_out: bool = False
    duration_s: float = 0.0
    note: str = ""  # what happened to the shell itself (exited, restarted), for the model to read


def ansi_c_quote(text: str) -> str:
    """`$'...'` quoting: any text as one bash word on one line. NUL cannot live in bash strings."""
    return (
        "$'"
        + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\r", "\\r").replace("\0", "")
        + "'"
    )


def decode_output(data: bytes) -> str:
    """Text for the model: undecodable bytes and NULs (binary output) become U+FFFD."""
    return data.decode("utf-8", errors="replace").replace("\0", "\ufffd")


class HeadTail:
    """Head and tail of a long byte stream, with the count of what was dropped in between."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        half = MAX_CAPTURE // 2
        room = half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        if len(self.tail) > half:
            self.dropped += len(self.tail) - half
            del self.tail[: len(self.tail) - half]

    def bytes(self) -> bytes:
        gap = f"\n[... {self.dropped} bytes of output dropped ...]\n".encode() if self.dropped else b""
        return bytes(self.head) + gap + bytes(self.tail)


class ShellSession:
    """One persistent shell. Calls are serialized; `interrupt()` may be called from any thread."""

    def __init__(self, host: ShellHost, name: str, cwd: str, annotate: Callable[[str, int], str] | None = None) -> None:
        self.host = host
        self.annotate = annotate  # (command, exit code) -> a note for the model, or ""
        self.name = name
        self.cwd = cwd  # last directory the shell reported; a restarted shell starts here
        self._exit_file = f"{host.scratch_dir.rstrip('/')}/.sh-{name}.exit"
        if not re.fullmatch(r"[\w./-]+", self._exit_file):
            raise SandboxError(f"scratch dir {host.scratch_dir!r} or session name {name!r} needs quoting")
        self._stream: ShellStream | None = None
        self._buf = bytearray()
        self._lines = 0  # input lines the shell has read: bash numbers eval's lines after them
        self._lock = threading.Lock()
        self._call: tuple[str, str, str] | None = None  # (nonce, out, shell pid) of the call in progress
        self._closed = False
        self._renew = False  # the next call starts a new shell (see renew)

    # -- lifecycle ---------------------------------------------------------------------------------

    def _open(self) -> ShellStream:
        if self._closed:
            raise SandboxError(f"shell session {self.name!r} used after its sandbox stopped")
        stream = self.host.open_shell_stream(self.cwd)
        # The EXIT trap writes to a file: during `exit` inside eval, stdout is the call's output file.
        try:
            stream.send(f'trap \'printf "%d %s" "$?" "$PWD" >{self._exit_file}\' EXIT\n'.encode())
        except OSError:  # killed as it started (interrupt): the call reports a dead shell
            stream.close()
            raise
        self._stream, self._buf, self._lines = stream, bytearray(), 1
        return stream

    def close(self) -> None:
        self._closed = True
        self._drop()

    def _drop(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()

    def renew(self) -> None:
        """The next call runs in a new shell: this one is being killed (with every process of its sandbox)
        and may still look alive for a moment, so a call sent to it now could be lost."""
        self._renew = True

    def interrupt(self) -> None:
        """Kill the call in progress (its whole process tree); the call returns as timed out."""
        call = self._call
        if call is not None:
            self.host.kill_call(*call)

    # -- calls -------------------------------------------------------------------------------------

    def run(
        self,
        command: str,
        timeout: float,
        subshell: bool = False,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> ShellResult:
        """Run `command` in the shell. `subshell=True` (with optional env and cwd) runs it in `( )`, so
        it leaves the shell's state alone: `Environment.execute` semantics over the same stream."""
        with self._lock:
            return self._run(command, timeout, subshell, env, cwd)

    def try_run(
        self,
        command: str,
        timeout: float,
        subshell: bool = False,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> ShellResult | None:
        """`run`, or None at once if another thread's call is in progress (then use another session)."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return self._run(command, timeout, subshell, env, cwd)
        finally:
            self._lock.release()

    def _run(
        self, command: str, timeout: float, subshell: bool, env: dict[str, str] | None, cwd: str | None
    ) -> ShellResult:
        start = time.monotonic()
        nonce = secrets.token_hex(8)
        out = f"{self.host.scratch_dir.rstrip('/')}/.sh-{self.name}-{nonce}"
        if self._renew:
            self._renew = False
            self._drop()
        stream: ShellStream | None = None
        first_line = self._lines
        try:
            try:
                stream = self._stream or self._open()
                first_line = self._send(stream, command, nonce, out, subshell, env, cwd)
            except OSError:
                if not subshell:
                    raise
                # A stateless call (`execute`) to a shell that died since the last one (killed with the
                # rollout's commands): nothing of it ran, so it runs in a new shell.
                self._drop()
                stream = self._open()
                first_line = self._send(stream, command, nonce, out, subshell, env, cwd)
            marker, timed_out, gone = self._wait_marker(stream, nonce, out, start + timeout)
        except OSError:  # the shell died before it could read the call
            marker, timed_out, gone = None, False, True
        finally:
            self._call = None
        if marker is not None and timed_out:  # again, for a child between fork and redirect the first time
            assert stream is not None
            self.host.kill_call(nonce, out, stream.pid)
        output = _renumber(self._output(stream, nonce, out, marker is not None), first_line)
        note = ""
        if marker is not None:
            assert stream is not None
            rc, self.cwd = marker
            if timed_out:
                rc = -9
                self._settle(stream)
            if self.annotate is not None and not timed_out:
                note = self.annotate(command, rc)
        else:
            self._drop()
            status = self.host.read_output(self._exit_file).decode(errors="replace").split(" ", 1)
            exited = len(status) == 2 and status[0].lstrip("-").isdigit()
            rc = int(status[0]) if exited else (-9 if timed_out else 1)
            if exited and os.path.isabs(status[1]):
                self.cwd = status[1]
            if timed_out:
                note = (
                    "[the shell did not come back after the command was killed, so a new shell was "
                    f"started in {self.cwd}; variables, functions and options set before are gone]"
                )
            elif gone:
                why = f"exited with code {rc}" if exited else "was killed"
                note = (
                    f"[the shell {why}; a new shell was started in {self.cwd}; variables, functions "
                    "and options set before are gone]"
                )
        return ShellResult(
            output=decode_output(output),
            returncode=rc,
            timed_out=timed_out,
            note=note,
            duration_s=time.monotonic() - start,
        )

    def _send(
        self,
        stream: ShellStream,
        command: str,
        nonce: str,
        out: str,
        subshell: bool,
        env: dict[str, str] | None,
        cwd: str | None,
    ) -> int:
        """Write the call's line; the shell's line number of the call."""
        self._lines += 1
        self._call = (nonce, out, stream.pid)
        stream.send(self._line(command, nonce, out, subshell, env, cwd))
        return self._lines

    def _settle(self, stream: ShellStream) -> None:
        """After a timeout, let the shell reap what was killed outside any call: its "Killed" job notices
        then go to its discarded stderr, not into the next call's output."""
        nonce = secrets.token_hex(8)
        self._lines += 1
        try:
            stream.send(f"( : ) 2>/dev/null; printf '\\036{nonce} 0 %s\\n' \"$PWD\"\n".encode())
            self._wait_marker(stream, nonce, "", time.monotonic() + KILL_GRACE)
        except OSError:
            pass

    def _line(
        self, command: str, nonce: str, out: str, subshell: bool, env: dict[str, str] | None, cwd: str | None
    ) -> bytes:
        """The call's line. A long command follows it as raw bytes read by `head -c`: bash reads its own
        input one byte per syscall (so a child could read the rest), ~3 us a byte; `head` reads blocks,
        and nothing else is in the stream until the call's marker comes back."""
        q_out = ansi_c_quote(out)
        data = command.replace("\0", "").encode()
        if len(data) > _INLINE_MAX:
            fetch, body, drop = f"__mimo_c=$(command -p head -c {len(data)}); ", 'eval "$__mimo_c"', "; unset __mimo_c"
        else:
            fetch, body, drop, data = "", f"eval {ansi_c_quote(command)}", "", b""
        if subshell:
            pre = "".join(
                f"export {k}={ansi_c_quote(v)}; "
                for k, v in (env or {}).items()
                if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)
            )
            go = f"cd -- {ansi_c_quote(cwd)} || exit 1; " if cwd else ""
            body = f"( {go}{pre}{body} )"
        line = (
            f"{fetch}MIMO_CALL={nonce}; export MIMO_CALL; {body} </dev/null >{q_out} 2>&1; "
            f'printf \'\\036{nonce} %d %s\\n\' "$?" "$PWD"; unset MIMO_CALL{drop}'
        )
        if self.host.inline_output:
            line += f"; cat {q_out}; rm -f {q_out}; printf '\\036{nonce}E\\n'"
        return (line + "\n").encode() + data

    def _wait_marker(
        self, stream: ShellStream, nonce: str, out: str, deadline: float
    ) -> tuple[tuple[int, str] | None, bool, bool]:
        """(rc, cwd) from the marker line, whether the call timed out, whether the shell is gone."""
        tag = _RS + nonce.encode() + b" "
        timed_out = False
        while True:
            pos = self._buf.find(tag)
            if pos >= 0:
                end = self._buf.find(b"\n", pos)
                if end >= 0:
                    rc_s, _, cwd = bytes(self._buf[pos + len(tag) : end]).decode(errors="replace").partition(" ")
                    del self._buf[: end + 1]
                    return (int(rc_s), cwd), timed_out, False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if timed_out:
                    return None, True, False
                timed_out = True
                self.host.kill_call(nonce, out, stream.pid)
                deadline = time.monotonic() + KILL_GRACE
                continue
            chunk = stream.recv(remaining)
            if chunk is None:
                continue
            if not chunk:
                return None, timed_out, True
            self._buf += chunk

    def _output(self, stream: ShellStream | None, nonce: str, out: str, marked: bool) -> bytes:
        if not (self.host.inline_output and marked) or stream is None:
            return self.host.read_output(out)
        end_tag = _RS + nonce.encode() + b"E\n"
        capture = HeadTail()
        while True:
            pos = self._buf.find(end_tag)
            if pos >= 0:
                capture.feed(bytes(self._buf[:pos]))
                del self._buf[: pos + len(end_tag)]
                return capture.bytes()
            keep = len(end_tag)
            if len(self._buf) > keep:
                capture.feed(bytes(self._buf[:-keep]))
                del self._buf[:-keep]
            chunk = stream.recv(60.0)
            if not chunk:
                capture.feed(bytes(self._buf))
                self._buf.clear()
                return capture.bytes()
            self._buf += chunk


def _renumber(output: bytes, first_line: int) -> bytes:
    """bash numbers an eval'd command's lines after every line the shell read before it: give the
    model's own numbers back (`bash: eval: line 7:` on the 5th call -> `bash: line 3:`)."""

    def fix(m: re.Match[bytes]) -> bytes:
        n = int(m.group(1))
        return b"bash: line %d:" % (n - first_line + 1) if n >= first_line else m.group(0)

    return _ERROR_LINE.sub(fix, output) if b"bash: " in output else output
