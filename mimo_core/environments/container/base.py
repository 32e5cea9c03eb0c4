"""The part of a container backend that does not depend on how commands reach the container.

Docker and Kubernetes differ only in transport (the engine's exec socket, the API server's exec
websocket) and in how the container is made. Everything else is here: PID 1 that ignores the agent's
signals, the marker every command carries, killing by marker, the start-up probe and seeding, and the
bookkeeping of the bash tool's persistent shells. A subclass provides `exec_bytes` (run a short `sh`
script, return exit code and output), `open_shell_stream`, `execute` and the file methods.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from mimo_core.environments.base import SandboxSpec
from mimo_core.environments.shell import MAX_CAPTURE, ShellSession, ShellStream
from mimo_core.errors import SandboxError

if TYPE_CHECKING:
    from mimo_core.config import EnvironmentConfig

# What a command's environment always holds: no pager or colours that a model cannot read.
QUIET_ENV = {"TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "MANPAGER": "cat", "NO_COLOR": "1"}
# PID 1 of every container. The kernel drops signals sent to a namespace's PID 1 from inside it unless PID 1
# handles them, and this shell handles none: an agent's `kill -TERM 1`, `pkill sleep` or `kill -9 -1`
# cannot end the container (and so cannot turn a failed task into an infrastructure error that a resume
# redoes). Its `wait` also reaps orphaned zombies. The runner removes containers with SIGKILL.
KEEPALIVE = "while :; do sleep 86400 & wait $!; done"
KILL_GRACE = 5.0  # seconds to wait for an exec's stream to end after its processes were killed
EXEC_MARKER = "MIMO_EXEC_ID"  # every `execute` carries `MIMO_EXEC_ID=<random>` in its environment


def kill_script(needle: str, holding: str = "", spare: str = "") -> str:
    """`sh` code that SIGKILLs every process of the container whose environment holds `needle` or that
    holds the file `holding` open (a subshell that never exec'd), sparing PID 1, `spare` (the shell) and
    itself; scanned again while a pass found something, so the killed are gone when it returns."""
    q_needle, q_out = shlex.quote(needle), shlex.quote(holding)
    spare = spare if spare.isdigit() else "0"
    fds = (
        f"[ $h = 0 ] && [ -e {q_out} ] && for f in $p/fd/*; do [ $f -ef {q_out} ] && h=1 && break; done; "
        if holding
        else ""
    )
    return (
        f"for r in 1 2 3 4 5; do k=0; for p in /proc/[0-9]*; do i=${{p#/proc/}}; "
        f"[ $i = 1 ] || [ $i = {spare} ] || [ $i = $$ ] && continue; h=0; "
        f"grep -qsF {q_needle} $p/environ && h=1; {fds}"
        "[ $h = 1 ] && kill -9 $i 2>/dev/null && k=1; done; [ $k = 0 ] && break; done; true"
    )


# Processes other than PID 1, this script, and PID 1's own `sleep 86400` (KEEPALIVE's): what the agent
# (or code under test) left running. The state is read after the last ")" of /proc/<pid>/stat, so a
# process name with spaces cannot shift it.
COUNT_SCRIPT = (
    'n=0; for p in /proc/[0-9]*; do i=${p#/proc/}; [ "$i" = 1 ] || [ "$i" = $$ ] && continue; '
    'read -r l < $p/stat 2>/dev/null || continue; r=${l##*) }; s=${r%% *}; [ "$s" = Z ] && continue; '
    'pp=${r#* }; pp=${pp%% *}; if [ "$pp" = 1 ] && '
    "[ \"$(tr '\\0' ' ' < $p/cmdline 2>/dev/null)\" = 'sleep 86400 ' ]; then continue; fi; n=$((n+1)); done"
)
KILL_ALL_SCRIPT = (
    f"{COUNT_SCRIPT}; first=$n; rr=0; while [ $n != 0 ] && [ $rr -lt 20 ]; do kill -9 -1 2>/dev/null; "
    f"sleep 0.05; {COUNT_SCRIPT}; rr=$((rr+1)); done; echo $first $n"
)


def capture_script(command: str, out: str) -> str:
    """`sh` code that runs `command` (shell text that yields the command, e.g. a quoted string or `"$c"`)
    with bash, its output in the file `out`, then prints the file and exits with the command's code: the
    exec waits for bash only, so a background job holding stdout open cannot hold the call."""
    return (
        f"bash -c {command} </dev/null >{out} 2>&1; __mimo_rc=$?; cat {out} 2>/dev/null; rm -f {out}; exit $__mimo_rc"
    )


class ContainerEnvironment:
    """The backend-neutral half of a one-container-per-rollout sandbox."""

    inline_output = True  # the host cannot see the container's files: a shell prints each call's output
    options_model: ClassVar[type[BaseModel]]
    options: Any  # an instance of the backend's options_model (each backend reads its own fields)
    backend_name: ClassVar[str]

    def __init__(self, spec: SandboxSpec, config: EnvironmentConfig, **_: Any) -> None:
        self.spec = spec.model_copy(deep=True)
        self.config = config
        try:
            self.options = self.options_model.model_validate(config.backend_kwargs)
        except Exception as e:
            raise SandboxError(f"environment.backend_kwargs ({self.backend_name}): {e}") from None
        self.scratch_dir: str = self.options.scratch_dir
        self.image: str | None = None
        self._sessions: dict[str, ShellSession] = {}

    # -- what a transport provides -------------------------------------------------------------------

    def exec_bytes(self, script: str, stdin: bytes = b"", timeout: float = 300.0) -> tuple[int, bytes, str]:
        """(exit code, stdout, stderr) of `sh -c script` in the container."""
        raise NotImplementedError

    def _require(self) -> Any:
        raise NotImplementedError

    def _where(self) -> str:
        """The container, for messages."""
        raise NotImplementedError

    # -- shared ----------------------------------------------------------------------------------------

    def _prepare(self) -> None:
        """Once the container runs: its working folders exist and bash works; the seed is copied in."""
        dirs = " ".join(shlex.quote(d) for d in (self.spec.cwd, self.scratch_dir))
        probe = self.execute(f"mkdir -p {dirs}", timeout=60, cwd="/")
        if probe.returncode != 0:
            raise SandboxError(f"{self._where()} (image {self.image}) cannot run bash: {probe.output.strip()[:500]}")
        if self.spec.seed_dir:
            seed = Path(self.spec.seed_dir)
            if not seed.is_dir():
                raise SandboxError(f"seed_dir {seed} is not a folder")
            self.copy_in(seed, self.spec.cwd)

    def copy_in(self, src: Path, dest: str) -> None:
        raise NotImplementedError

    def execute(
        self, command: str, timeout: float | None = None, cwd: str | None = None, env: dict[str, str] | None = None
    ) -> Any:
        raise NotImplementedError

    def _workdir(self, cwd: str | None) -> str:
        if cwd is None:
            return self.spec.cwd
        return cwd if cwd.startswith("/") else f"{self.spec.cwd.rstrip('/')}/{cwd}"

    def _close_sessions(self) -> None:
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()

    def interrupt(self) -> None:
        """Kill every process of the container but its PID 1, now (any thread): running commands return."""
        with contextlib.suppress(Exception):
            self._require()
            self.exec_bytes("kill -9 -1", timeout=10)

    def _kill(self, marker: str, name: str = EXEC_MARKER, holding: str = "", spare: str = "") -> None:
        """SIGKILL every process carrying `name=marker` in its environment (or holding `holding` open)."""
        with contextlib.suppress(Exception):  # the container is gone: the caller finds out on its next call
            self.exec_bytes(kill_script(f"{name}={marker}", holding, spare), timeout=30)

    # -- grading (GradingSeam) --------------------------------------------------------------------------

    def _kill_everything(self) -> int:
        """Kill every process but PID 1 (and its keep-alive child); how many there were. One `kill -9 -1`
        by root leaves no survivor (a fork racing it is refused once its parent has the signal pending);
        the rounds are for processes of other users. Raises SandboxError if any survives them."""
        for _ in range(3):  # an exec's output can come back empty under load (the engine's attach race)
            code, raw, err = self.exec_bytes(KILL_ALL_SCRIPT, timeout=120)
            out = raw.decode(errors="replace").split()
            if len(out) == 2 and all(x.isdigit() for x in out):
                break
        else:
            raise SandboxError(
                f"{self._where()}: could not kill the agent's processes (exit {code}): {' '.join(out)[:200]}{err[:200]}"
            )
        if out[1] != "0":
            raise SandboxError(f"{self._where()}: {out[1]} process(es) survived being killed")
        return int(out[0])

    def count_processes(self) -> int:
        """How many processes the agent (or code under test) has running now; retried like the kill, since
        an exec's output can come back empty under load. Raises SandboxError if it never answers."""
        for _ in range(3):
            code, raw, err = self.exec_bytes(f"{COUNT_SCRIPT}; echo $n", timeout=60)
            out = raw.decode(errors="replace").split()
            if out and out[-1].isdigit():
                return int(out[-1])
        raise SandboxError(f"{self._where()}: could not count the agent's processes (exit {code}): {err[:200]}")

    def end_processes(self) -> int:
        """Kill every process now running in the container (its shells too); how many there were."""
        self._close_sessions()
        return self._kill_everything()

    def _end_agent(self) -> int:
        """Kill every process of the agent's phase; backends that can restart the container do that."""
        return self._kill_everything()

    def begin_grading(self) -> int:
        """End the agent's phase: every process it left is killed, and `scratch_dir` is a new folder made
        after that, where no process of the agent could have put anything."""
        self._close_sessions()
        alive = self._end_agent()
        fresh = f"{self.options.scratch_dir.rstrip('/')}-grading-{secrets.token_hex(4)}"
        code, out, err = self.exec_bytes(f"mkdir -m 700 -- {shlex.quote(fresh)}", timeout=60)
        if code != 0:
            raise SandboxError(f"{self._where()}: cannot make the grading folder {fresh}: {(out or b'').decode()}{err}")
        self.scratch_dir = fresh
        return alive

    def read_only_view(self) -> None:
        """No read-only view of a live container: the judge gets read-only file tools instead."""
        return None

    def mark_system_baseline(self) -> None:
        """From now on, a change outside the kept paths is the agent's (container/system_files.py). Called
        at the end of `start()`; the rollout calls it again once the task's setup is done, so what the setup
        installed (a `setup_script`'s `pip install`) stays. The time is the container's clock, held here."""
        code, raw, err = self.exec_bytes(
            "d=$(date +%s.%N); case $d in *[!0-9.]*|*.) date +%s;; *) echo $d;; esac", timeout=60
        )
        stamp = raw.decode(errors="replace").strip()
        if code != 0 or not re.fullmatch(r"\d+(\.\d+)?", stamp):
            raise SandboxError(
                f"{self._where()}: cannot read the container's clock (exit {code}): {stamp[:100]}{err[:100]}"
            )
        self._system_baseline = stamp

    def discard_system_changes(self, keep: list[str]) -> list[str]:
        """After `begin_grading()`, before the submission is collected: every path outside `keep` (the
        repository, /logs, /tests, ...; the grading scratch folder is always kept) that changed since
        `mark_system_baseline()` is put back to the image's version: added paths removed, changed or
        deleted ones restored, from a reference container of the image started only when needed.
        Returns what was found, sorted, as `added <path>`, `changed <path>`, `deleted <path>`, or
        `unrestored <path> (why)` when the image's version could not be had (at most 200 entries, then
        `... and N more`). Temporary files (/tmp, /var/tmp) and bytecode caches are removed unreported."""
        from mimo_core.environments.container.system_files import SystemFiles

        self._require()
        since = getattr(self, "_system_baseline", None)
        if since is None:
            raise SandboxError(f"{self._where()}: discard_system_changes before mark_system_baseline")
        return SystemFiles(self, since, [*keep, self.scratch_dir]).run()

    def _reference(self) -> Any:
        """A context manager: a sandbox of the same image that nothing has touched (`exec_bytes`,
        `write_file`), removed on exit."""
        raise NotImplementedError

    def _extract_root(self, archive: bytes) -> None:
        """Unpack a tar (names relative to /) at / in the container, owners and modes as in the tar."""
        raise NotImplementedError

    def open_shell_stream(self, cwd: str) -> ShellStream:
        """A new bash in the container at `cwd`: its stdin and its output (ShellHost)."""
        raise NotImplementedError

    # -- persistent shells (the ShellHost side of shell.py) ---------------------------------------------

    def shell(self, name: str = "main") -> ShellSession:
        """The rollout's persistent shell called `name`, started on first use."""
        self._require()
        session = self._sessions.get(name)
        if session is None:
            session = self._sessions[name] = ShellSession(self, name, self.spec.cwd)
        return session

    def kill_call(self, nonce: str, out: str, shell_pid: str) -> None:
        self._kill(nonce, "MIMO_CALL", out, shell_pid)

    def read_output(self, path: str) -> bytes:
        q = shlex.quote(path)
        try:
            return self.exec_bytes(f"head -c {MAX_CAPTURE} {q} 2>/dev/null; rm -f {q}", timeout=60)[1]
        except Exception:
            return b""
