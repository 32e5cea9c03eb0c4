"""One bubblewrap sandbox per rollout, started once, holding every process of the rollout.

Inside the sandbox, PID 1 is a small control shell (`bwrap --as-pid-1`): the kernel ignores signals
sent to a namespace's init from inside it, so an agent's `kill -9 -1` cannot end the sandbox, and as
PID 1 it reaps orphans. The host talks to it over a pipe, one request line and one reply line each:
start a shell session (its stdin/stdout are FIFOs in the scratch folder, opened by the host), kill a
session, kill the processes carrying a marker. Commands and the bash tool's shells are children of it,
so they all live in the sandbox's own PID (and user, IPC, UTS, cgroup) namespaces and, unless the task
allows network, its own empty network namespace. When the runner dies, even by SIGKILL, the kernel
kills the sandbox with it (`--die-with-parent`, and the namespace dies with its PID 1).
"""

from __future__ import annotations

import os
import secrets
import shlex
import signal
import subprocess
import threading
import time

from mimo_core.environments.local_procs import CALL_VAR, FdStream
from mimo_core.environments.shell import ansi_c_quote
from mimo_core.environments.task_cwd import bwrap_root_args, bwrap_task_cwd_args
from mimo_core.errors import SandboxError

_REPLY_TIMEOUT = 30.0
# Kill one call's processes without forking: bash builtins only (the sandbox holds few processes). A
# process is the call's if its environment holds the marker or it holds the call's output file open
# (`-ef`: same inode). Scanned again while a pass found something, so the killed are gone (a zombie has
# no environ and no fds) before we answer. PID 1 (this shell) and the session's shell are spared.
_KILL_CALL = (
    "__o={out}; for __r in 1 2 3 4 5; do __k=0; for __p in /proc/[0-9]*; do __i=${{__p#/proc/}}; "
    "[ \"$__i\" = 1 ] || [ \"$__i\" = {spare} ] && continue; __h=0; "
    "mapfile -d '' -t __e < \"$__p/environ\" 2>/dev/null || continue; "
    "for __v in \"${{__e[@]}}\"; do [ \"$__v\" = {needle} ] && {{ __h=1; break; }}; done; "
    "if [ $__h = 0 ] && [ -e \"$__o\" ]; then for __f in \"$__p\"/fd/*; do "
    "[ \"$__f\" -ef \"$__o\" ] && {{ __h=1; break; }}; done; fi; "
    "[ $__h = 1 ] && {{ kill -9 \"$__i\" 2>/dev/null; __k=1; }}; done; [ $__k = 0 ] && break; done; "
    "unset __o __r __k __p __i __h __e __v __f"
)


def bwrap_args(root: str, writable: list[str], network: bool, task_cwd: str, work: str) -> list[str]:
    """Read-only host, private /tmp, fresh /proc and /dev, own namespaces; only our folders writable.

    The root holding every rollout's folders is hidden behind an empty tmpfs, so one rollout can neither
    read nor write another's. The work folder is also bound at the task's cwd (task_cwd.py).
    """
    root = os.path.realpath(root)
    args = ["bwrap", *bwrap_root_args(), "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--tmpfs", root, "--unshare-all", "--die-with-parent", "--new-session", "--as-pid-1"]
    if network:
        args.append("--share-net")
    for d in writable:
        args += ["--bind", d, d]
    return args + bwrap_task_cwd_args(task_cwd, work, writable_roots=("/tmp", root))


class BwrapSandbox:
    """The control process of one sandbox and the shells it starts."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: str, scratch_dir: str) -> None:
        self.args = args
        self.env = env
        self.cwd = cwd
        self.scratch_dir = scratch_dir
        self.proc: subprocess.Popen | None = None
        self._stream: FdStream | None = None
        self._buf = bytearray()
        self._lock = threading.Lock()

    def start(self, timeout: float = _REPLY_TIMEOUT) -> None:
        errlog = os.path.join(self.scratch_dir, ".bwrap.err")
        with open(errlog, "wb") as err:
            self.proc = subprocess.Popen(
                [*self.args, "--chdir", self.cwd, "bash", "--noprofile", "--norc"], env=self.env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, close_fds=True,
                start_new_session=True, bufsize=0,
            )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._stream = FdStream(os.dup(self.proc.stdin.fileno()), os.dup(self.proc.stdout.fileno()),
                                lambda: None)
        self.proc.stdin.close()
        self.proc.stdout.close()
        try:
            # No `trap '' TERM`: as PID 1 it is immune anyway, and ignored signals would be inherited
            # by every command, so the agent's own `kill` could not stop them.
            reply = self.ask("echo ready", timeout)
        except SandboxError:
            reply = ""
        if reply != "ready":
            self.stop()
            try:
                with open(errlog, "rb") as f:
                    why = f.read().decode(errors="replace").strip()[-500:]
            except OSError:
                why = ""
            raise SandboxError(f"bubblewrap cannot start a sandbox here: {why or 'no reply'}")

    def ask(self, line: str, timeout: float = _REPLY_TIMEOUT) -> str:
        """Send one line to the control shell and return its one-line reply."""
        with self._lock:
            stream = self._stream
            if stream is None:
                raise SandboxError("the bubblewrap sandbox is stopped")
            try:
                stream.send(line.encode() + b"\n")
            except OSError:
                raise SandboxError("the bubblewrap sandbox is gone (its control process died)") from None
            deadline = time.monotonic() + timeout
            while b"\n" not in self._buf:
                remaining = deadline - time.monotonic()
                chunk = stream.recv(remaining) if remaining > 0 else None
                if chunk is None and remaining <= 0:
                    raise SandboxError(f"the bubblewrap sandbox did not answer within {timeout:g}s")
                if chunk == b"":
                    raise SandboxError("the bubblewrap sandbox is gone (its control process died)")
                self._buf += chunk or b""
            reply, _, rest = bytes(self._buf).partition(b"\n")
            self._buf = bytearray(rest)
            return reply.decode(errors="replace")

    def open_stream(self, cwd: str) -> FdStream:
        """A new `bash` inside the sandbox, its stdin/stdout two FIFOs that only the host and it hold."""
        base = os.path.join(self.scratch_dir, f".fifo-{secrets.token_hex(6)}")
        fifo_in, fifo_out = base + ".in", base + ".out"
        os.mkfifo(fifo_in, 0o600)
        os.mkfifo(fifo_out, 0o600)
        read_fd = os.open(fifo_out, os.O_RDONLY | os.O_NONBLOCK)  # a writer may open it now
        write_fd = os.open(fifo_in, os.O_RDWR)  # never blocks; EOF for the shell once we close it
        pid = self.ask(f"(cd -- {ansi_c_quote(cwd)} 2>/dev/null; exec bash --noprofile --norc "
                       f">{shlex.quote(fifo_out)} <{shlex.quote(fifo_in)} 2>/dev/null) & echo $!")

        def kill() -> None:
            for path in (fifo_in, fifo_out):
                try:
                    os.unlink(path)
                except OSError:
                    pass
            if pid.isdigit():
                try:
                    self.ask(f"kill -9 {pid} 2>/dev/null; echo ok", timeout=5)
                except SandboxError:
                    pass

        return _FifoStream(write_fd, read_fd, kill, pid)

    def kill_call(self, nonce: str, out: str, shell_pid: str) -> None:
        spare = shell_pid if shell_pid.isdigit() else "0"
        self.ask(_KILL_CALL.format(needle=shlex.quote(f"{CALL_VAR}={nonce}"), out=shlex.quote(out), spare=spare)
                 + "; echo ok")

    def kill_commands(self) -> None:
        """Kill every process of the sandbox but its PID 1 (any thread): the sandbox stays usable."""
        try:
            self.ask("kill -9 -1 2>/dev/null; echo ok", timeout=5)
        except SandboxError:
            self.kill_all()

    def kill_all(self) -> None:
        """Kill every process of the sandbox at once (the namespace dies with its PID 1). Any thread."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def stop(self) -> None:
        self.kill_all()
        if self.proc is not None:
            self.proc.wait()
            self.proc = None
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()


class _FifoStream(FdStream):
    """The read end is non-blocking (opened before any writer existed): a wake-up may find nothing."""

    def recv(self, timeout: float) -> bytes | None:
        if not self._poll.poll(max(0, int(timeout * 1000) + 1)):
            return None
        try:
            return os.read(self.read_fd, 65536)
        except BlockingIOError:
            return None
