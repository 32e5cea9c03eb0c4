"""One bubblewrap sandbox per rollout phase, started once, holding every process of that phase.

Inside the sandbox, PID 1 is a small control shell (`bwrap --as-pid-1`): the kernel ignores signals
sent to a namespace's init from inside it, so an agent's `kill -9 -1` cannot end the sandbox, and as
PID 1 it reaps orphans. The host talks to it over a pipe, one request line and one reply line each:
start a shell session (its stdin/stdout are FIFOs in the control folder, which the sandbox sees
read-only, so no FIFO can be swapped for a link), kill a session, kill the processes carrying a marker,
count and kill every process. Commands and the bash tool's shells are children of it, so they all live
in the sandbox's own PID, network (slirp4netns for outbound traffic when the task allows it, never the
host's loopback), user, IPC, UTS and cgroup namespaces. When the runner dies, even by SIGKILL, the
kernel kills the sandbox with it (`--die-with-parent`, and the namespace dies with its PID 1).
"""

from __future__ import annotations

import os
import secrets
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from mimo_core.environments.local.allowlist import system_args
from mimo_core.environments.local.cgroups import Limits, SandboxCgroup
from mimo_core.environments.local.network import RESOLV_CONF, Slirp
from mimo_core.environments.local.procs import CALL_VAR, FdStream
from mimo_core.environments.local.task_cwd import bwrap_task_cwd_args
from mimo_core.environments.shell import ansi_c_quote
from mimo_core.errors import SandboxError

_REPLY_TIMEOUT = 30.0
# Kill one call's processes without forking: bash builtins only (the sandbox holds few processes). A
# process is the call's if its environment holds the marker or it holds the call's output file open
# (`-ef`: same inode). Scanned again while a pass found something, so the killed are gone (a zombie has
# no environ and no fds) before we answer. PID 1 (this shell) and the session's shell are spared.
_KILL_CALL = (
    "__o={out}; for __r in 1 2 3 4 5; do __k=0; for __p in /proc/[0-9]*; do __i=${{__p#/proc/}}; "
    '[ "$__i" = 1 ] || [ "$__i" = {spare} ] && continue; __h=0; '
    "mapfile -d '' -t __e < \"$__p/environ\" 2>/dev/null || continue; "
    'for __v in "${{__e[@]}}"; do [ "$__v" = {needle} ] && {{ __h=1; break; }}; done; '
    'if [ $__h = 0 ] && [ -e "$__o" ]; then for __f in "$__p"/fd/*; do '
    '[ "$__f" -ef "$__o" ] && {{ __h=1; break; }}; done; fi; '
    '[ $__h = 1 ] && {{ kill -9 "$__i" 2>/dev/null; __k=1; }}; done; [ $__k = 0 ] && break; done; '
    "unset __o __r __k __p __i __h __e __v __f"
)


@dataclass
class SandboxFolders:
    """The rollout's own folders, as a sandbox binds them (host paths, bound at the same paths inside)."""

    work: str  # read-write (read-only in a read-only view), also bound at the task's cwd
    scratch: str  # read-write: the framework's scripts and each call's output file
    home: str  # $HOME, read-write (read-only in a read-only view)
    ctl: str  # read-only inside: the FIFOs of the shells, files handed in by the host
    task_cwd: str
    network: bool = False  # outbound network (slirp4netns); never the host's loopback
    mounts: dict[str, str] = field(default_factory=dict)  # host folder -> sandbox path, read-only


def bwrap_args(f: SandboxFolders, read_only: bool = False) -> list[str]:
    """An allow-list (allowlist.py), own namespaces of every kind (PID, network, IPC, UTS, cgroup, user
    where the kernel allows), no capabilities, and the rollout's folders. `read_only`: the work folder and
    home as well are read-only (a judge's view of the final state)."""
    empty, empty_file = os.path.join(f.ctl, "empty"), os.path.join(f.ctl, "empty-file")
    os.makedirs(empty, exist_ok=True)
    if not os.path.exists(empty_file):
        open(empty_file, "wb").close()
    args = [
        "bwrap",
        *system_args(empty, empty_file),
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
        "--hostname",
        "sandbox",
    ]
    if os.geteuid() == 0:  # bwrap keeps a root caller's capabilities (mknod, mount, ...) unless told not to
        args += ["--cap-drop", "ALL"]
    bind = "--ro-bind" if read_only else "--bind"
    args += [bind, f.work, f.work, bind, f.home, f.home, "--bind", f.scratch, f.scratch, "--ro-bind", f.ctl, f.ctl]
    for host_path, inside in f.mounts.items():
        args += ["--ro-bind", host_path, inside]
    if f.network:
        resolv = os.path.join(f.ctl, "resolv.conf")
        with open(resolv, "w") as fh:
            fh.write(RESOLV_CONF)
        if not os.path.islink("/etc/resolv.conf"):
            args += ["--ro-bind", resolv, "/etc/resolv.conf"]
    return args + bwrap_task_cwd_args(f.task_cwd, f.work, read_only=read_only)


# Count (then kill) every process but PID 1, with builtins only: no fork that would count itself.
_COUNT = (
    '__n=0; for __p in /proc/[0-9]*; do [ "${__p#/proc/}" = 1 ] && continue; '
    'read -r _ _ __s _ < "$__p/stat" 2>/dev/null || continue; [ "$__s" = Z ] || __n=$((__n+1)); done'
)
_KILL_ALL = (
    f"{_COUNT}; __first=$__n; for __r in 1 2 3 4 5 6 7 8 9 10; do [ $__n = 0 ] && break; "
    f"kill -9 -1 2>/dev/null; command -p sleep 0.02; {_COUNT}; done; echo $__first $__n; "
    "unset __n __p __s __first __r"
)


class BwrapSandbox:
    """The control process of one sandbox and the shells it starts."""

    def __init__(
        self, args: list[str], env: dict[str, str], cwd: str, folders: SandboxFolders, limits: Limits | None = None
    ) -> None:
        self.args = args
        self.env = env
        self.cwd = cwd
        self.folders = folders
        self.limits = limits or Limits()
        self.cgroup: SandboxCgroup | None = None
        self.oom_kills_at_stop = 0
        self.proc: subprocess.Popen | None = None
        self._slirp: Slirp | None = None
        self.child_pid: int | None = None  # the sandbox's first process as the host sees it
        self._stream: FdStream | None = None
        self._buf = bytearray()
        self._lock = threading.Lock()

    def start(self, timeout: float = _REPLY_TIMEOUT) -> None:
        errlog = os.path.join(self.folders.ctl, "bwrap.err")
        if self.limits.wanted():
            self.cgroup = SandboxCgroup.create(secrets.token_hex(8), self.limits)
        info_r, info_w = os.pipe()
        argv = [*self.args, "--info-fd", str(info_w), "--chdir", self.cwd, "bash", "--noprofile", "--norc"]
        if self.cgroup is not None:  # the sandbox's first process joins its cgroup, then execs bwrap
            argv = self.cgroup.wrap(argv)
        try:
            with open(errlog, "wb") as err:
                self.proc = subprocess.Popen(
                    argv,
                    env=self.env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    close_fds=True,
                    pass_fds=(info_w,),
                    start_new_session=True,
                    bufsize=0,
                )
            os.close(info_w)
            info_w = -1
            child = _child_pid(info_r, timeout)
        finally:
            os.close(info_r)
            if info_w >= 0:
                os.close(info_w)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._stream = FdStream(os.dup(self.proc.stdin.fileno()), os.dup(self.proc.stdout.fileno()), lambda: None)
        self.proc.stdin.close()
        self.proc.stdout.close()
        try:
            # No `trap '' TERM`: as PID 1 it is immune anyway, and ignored signals would be inherited
            # by every command, so the agent's own `kill` could not stop them.
            reply = self.ask("echo ready", timeout)
        except SandboxError:
            reply = ""
        self.child_pid = child
        if reply != "ready" or child is None:
            self.stop()
            try:
                with open(errlog, "rb") as f:
                    why = f.read().decode(errors="replace").strip()[-500:]
            except OSError:
                why = ""
            raise SandboxError(f"bubblewrap cannot start a sandbox here: {why or 'no reply'}")
        if self.folders.network:  # before any command runs: the control shell has run none yet
            self._slirp = Slirp(child, os.path.join(self.folders.ctl, "slirp4netns.log"))
            try:
                self._slirp.start()
            except SandboxError:
                self.stop()
                raise

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
        base = os.path.join(self.folders.ctl, f"fifo-{secrets.token_hex(6)}")
        fifo_in, fifo_out = base + ".in", base + ".out"
        os.mkfifo(fifo_in, 0o600)
        os.mkfifo(fifo_out, 0o600)
        read_fd = os.open(fifo_out, os.O_RDONLY | os.O_NONBLOCK)  # a writer may open it now
        write_fd = os.open(fifo_in, os.O_RDWR)  # never blocks; EOF for the shell once we close it
        # The shells (and all they start) are the OOM killer's first choice, PID 1 its last: a sandbox over
        # its memory budget loses a command, not its control shell (raising the score needs no privilege).
        pid = self.ask(
            f"(echo 1000 >/proc/self/oom_score_adj 2>/dev/null; cd -- {ansi_c_quote(cwd)} 2>/dev/null; "
            "exec bash --noprofile --norc "
            f">{shlex.quote(fifo_out)} <{shlex.quote(fifo_in)} 2>/dev/null) & echo $!"
        )

        def kill() -> None:
            for path in (fifo_in, fifo_out):
                try:
                    os.unlink(path)
                except OSError:
                    pass
            if pid.isdigit():
                try:
                    self.ask(f"kill -9 {pid} 2>/dev/null; wait {pid} 2>/dev/null; echo ok", timeout=5)
                except SandboxError:
                    pass

        return _FifoStream(write_fd, read_fd, kill, pid)

    def kill_call(self, nonce: str, out: str, shell_pid: str) -> None:
        spare = shell_pid if shell_pid.isdigit() else "0"
        self.ask(
            _KILL_CALL.format(needle=shlex.quote(f"{CALL_VAR}={nonce}"), out=shlex.quote(out), spare=spare)
            + "; echo ok"
        )

    def kill_commands(self) -> None:
        """Kill every process of the sandbox but its PID 1 (any thread): the sandbox stays usable."""
        try:
            self.ask("kill -9 -1 2>/dev/null; echo ok", timeout=5)
        except SandboxError:
            self.kill_all()

    def end_processes(self) -> int:
        """Kill every process but PID 1 until none is left (a fork racing the kill is caught by the next
        round); how many were alive before. Raises SandboxError when some survive every round."""
        first, _, left = self.ask(_KILL_ALL, timeout=30).partition(" ")
        if not first.isdigit() or left != "0":
            self.kill_all()
            raise SandboxError(f"processes of the sandbox survived being killed ({left or 'no answer'} left)")
        return int(first)

    def oom_kills(self) -> int:
        """Processes of this sandbox the kernel killed for its memory budget (0 without a memory cgroup)."""
        return self.cgroup.oom_kills() if self.cgroup is not None else 0

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
        if self._slirp is not None:
            self._slirp.stop()
            self._slirp = None
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()
        cgroup, self.cgroup = self.cgroup, None
        if cgroup is not None:
            self.oom_kills_at_stop = cgroup.oom_kills()
            cgroup.remove()


def _child_pid(info_fd: int, timeout: float) -> int | None:
    """The sandbox's first process as the host sees it, from bwrap's --info-fd JSON (None if bwrap failed)."""
    import json
    import select

    data = b""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return int(json.loads(data)["child-pid"])
        except (ValueError, KeyError):
            pass
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([info_fd], [], [], remaining)[0]:
            return None
        chunk = os.read(info_fd, 4096)
        if not chunk:
            return None
        data += chunk


class _FifoStream(FdStream):
    """The read end is non-blocking (opened before any writer existed): a wake-up may find nothing."""

    def recv(self, timeout: float) -> bytes | None:
        if not self._poll.poll(max(0, int(timeout * 1000) + 1)):
            return None
        try:
            return os.read(self.read_fd, 65536)
        except BlockingIOError:
            return None
