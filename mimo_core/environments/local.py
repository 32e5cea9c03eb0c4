"""The local backend: each rollout works in its own fresh folder on this host, optionally inside bubblewrap.

Tasks declare an absolute cwd such as `/testbed` that does not exist here, so the backend maps it to a
fresh host folder: after `start()`, `spec.cwd` is the real host path of the working directory, and any
path under the task's declared cwd (e.g. `/testbed/src/x.py`) given to `execute(cwd=...)` or the file
methods is mapped into it. Commands themselves are not rewritten: prompts should use `{{cwd}}`. With
`sandbox: bwrap` the work folder is also bound at the task's cwd, so commands see `/testbed` as in a
container (`task_cwd.py`).

Layout of one rollout (all removed by `stop()`):
    <root>/mimo-XXXX/sandbox.json  labels (run id, runner host/pid): `mimoagent cleanup` finds stale ones
    <root>/mimo-XXXX/work     the working directory (`spec.cwd`); `spec.seed_dir` is copied here
    <root>/mimo-XXXX/scratch  `scratch_dir`: framework state (shell output files), outside cwd
    <root>/mimo-XXXX/home     `$HOME` for commands, so rollouts never share dotfiles or caches

Every process the sandbox starts carries `MIMO_SANDBOX=<id>`; `stop()` kills all of them, including
background jobs that called `setsid` or `nohup`. With `sandbox: bwrap` ONE bubblewrap sandbox holds the
whole rollout (see bwrap.py): its persistent shells and every `execute`.
"""

from __future__ import annotations

import itertools
import os
import secrets
import shutil
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from mimo_core.environments import live
from mimo_core.environments.base import ExecResult, SandboxSpec
from mimo_core.environments.bwrap import BwrapSandbox, bwrap_args
from mimo_core.environments.local_cleanup import own_label, remove_tree, write_label
from mimo_core.environments.local_procs import (
    CALL_VAR,
    SANDBOX_VAR,
    kill_marked,
    popen_stream,
    read_capture,
)
from mimo_core.environments.shell import ShellResult, ShellSession, ShellStream
from mimo_core.environments.task_cwd import missing_cwd_note, sandbox_path
from mimo_core.environments.tool_path import tool_path
from mimo_core.errors import SandboxError

if TYPE_CHECKING:
    from mimo_core.config import EnvironmentConfig

# Host variables commands may see. Everything else (API keys above all) stays out of the agent's reach.
_INHERITED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "LOGNAME", "SHELL")
_QUIET = {"TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "MANPAGER": "cat", "NO_COLOR": "1"}
_SHELL = ["bash", "--noprofile", "--norc"]


class LocalOptions(BaseModel):
    """`environment.backend_kwargs` for the local backend. Unknown keys are an error, not ignored."""

    model_config = ConfigDict(extra="forbid")

    root: str | None = None  # where rollout folders are made; default: the system temp folder


class LocalEnvironment:
    """One rollout's working directory on this host. `sandbox: bwrap` confines it with bubblewrap."""

    inline_output = False  # shell output files are read straight from the host

    options_model = LocalOptions  # what environment.backend_kwargs may hold, checked at config load

    def __init__(self, spec: SandboxSpec, config: EnvironmentConfig, **_: Any) -> None:
        self.spec = spec.model_copy(deep=True)
        self.config = config
        self.task_cwd = self.spec.cwd  # the cwd the task declared; mapped to the host working dir
        self.sandbox = config.sandbox
        self.root = LocalOptions.model_validate(config.backend_kwargs).root or tempfile.gettempdir()
        self.base: str | None = None
        self.sandbox_id = secrets.token_hex(8)
        self.scratch_dir = ""
        self.home = ""
        self._env: dict[str, str] = {}
        self._bwrap: BwrapSandbox | None = None
        self._sessions: dict[str, ShellSession] = {}
        self._kill_lock = threading.Lock()  # no shell starts while interrupt() is killing the sandbox's processes

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        if self.sandbox == "bwrap" and shutil.which("bwrap") is None:
            raise SandboxError(
                "environment.sandbox is 'bwrap' but bubblewrap is not installed: "
                "apt-get install bubblewrap (or set sandbox: none)"
            )
        Path(self.root).mkdir(parents=True, exist_ok=True)
        self.base = tempfile.mkdtemp(prefix="mimo-", dir=self.root)
        write_label(self.base, own_label(self.sandbox_id, self.spec.labels))
        live.track(self)
        work = os.path.join(self.base, "work")
        self.scratch_dir = os.path.join(self.base, "scratch")
        self.home = os.path.join(self.base, "home")
        for d in (work, self.scratch_dir, self.home):
            os.mkdir(d)
        self.spec.cwd = work
        if self.spec.seed_dir:
            seed = Path(self.spec.seed_dir)
            if not seed.is_dir():
                raise SandboxError(f"seed_dir {seed} is not a folder (task {self.spec.labels or ''})")
            shutil.copytree(seed, work, symlinks=True, dirs_exist_ok=True)
        self._env = {k: os.environ[k] for k in _INHERITED if k in os.environ}
        self._env["PATH"] = tool_path(self._env.get("PATH"))
        self._env.update(_QUIET, HOME=self.home)
        self._env.update(self.spec.env)
        self._env[SANDBOX_VAR] = self.sandbox_id
        if self.sandbox == "bwrap":
            self._bwrap = BwrapSandbox(self._bwrap_args(), self._env, sandbox_path(work, self.task_cwd, work),
                                       self.scratch_dir)
            self._bwrap.start()

    def _bwrap_args(self) -> list[str]:
        return bwrap_args(self.root, [self.spec.cwd, self.scratch_dir, self.home], self.spec.network,
                          self.task_cwd, self.spec.cwd)

    def _inside(self, host_path: str) -> str:
        """A host path as the sandboxed commands see it (the work folder is bound at the task's cwd)."""
        return sandbox_path(host_path, self.task_cwd, self.spec.cwd) if self._bwrap is not None else host_path

    def interrupt(self) -> None:
        """Kill every process of this rollout now (any thread): a running command returns at once."""
        with self._kill_lock:
            if self._bwrap is not None:  # (bwrap itself carries the marker: no host-side scan here)
                self._bwrap.kill_commands()
                return
            for name, session in list(self._sessions.items()):
                if name.startswith("exec"):  # execute's shells die too: later commands get new ones
                    session.renew()
            kill_marked(SANDBOX_VAR, self.sandbox_id)

    def stop(self) -> None:
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()
        sandboxed = self._bwrap is not None
        if self._bwrap is not None:
            self._bwrap.stop()  # its PID namespace, and every process in it, dies with it
            self._bwrap = None
        if self.base is not None:
            if not sandboxed:  # background jobs, `setsid`/`nohup` ones included, carry the marker
                kill_marked(SANDBOX_VAR, self.sandbox_id)
            remove_tree(self.base)
            self.base = None
        live.untrack(self)

    # -- persistent shells (the ShellHost side of shell.py) -----------------------------------------

    def shell(self, name: str = "main") -> ShellSession:
        """The rollout's persistent shell called `name`, started on first use."""
        if self.base is None:
            raise SandboxError("LocalEnvironment.shell called before start() or after stop()")
        session = self._sessions.get(name)
        if session is None:
            annotate = None if self._bwrap is not None else self._missing_cwd_note
            session = self._sessions[name] = ShellSession(self, name, self._inside(self.spec.cwd), annotate)
        return session

    def _missing_cwd_note(self, command: str, returncode: int) -> str:
        return missing_cwd_note(command, returncode, self.task_cwd, self.spec.cwd).strip()

    def open_shell_stream(self, cwd: str) -> ShellStream:
        with self._kill_lock:  # (a shell started during interrupt()'s scan would be killed with the rest)
            if self._bwrap is not None:
                return self._bwrap.open_stream(cwd)  # a sandbox path; the shell stays put if it is gone
            return popen_stream(_SHELL, cwd if os.path.isdir(cwd) else self.spec.cwd, self._env)

    def kill_call(self, nonce: str, out: str, shell_pid: str) -> None:
        if self._bwrap is not None:
            self._bwrap.kill_call(nonce, out, shell_pid)
        else:
            kill_marked(CALL_VAR, nonce, out, int(shell_pid) if shell_pid.isdigit() else None)

    def read_output(self, path: str) -> bytes:
        return read_capture(path)

    # -- commands ----------------------------------------------------------------------------------

    def execute(
        self, command: str, timeout: float | None = None, cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        """Run `command` with bash (no profile), stdout+stderr merged, stdin empty.

        A subshell of the rollout's own `exec` shell (a persistent bash, inside the rollout's one
        bubblewrap sandbox when it has one): a command costs a fork, not a new bash spawned from this
        process (~3x the CPU), and its state never leaks into the next one. Its output goes to a file,
        so a background job that keeps the stream open cannot hold the call hostage. A timeout kills
        every process the command started; the shell and the sandbox keep working.
        """
        if self.base is None:
            raise SandboxError("LocalEnvironment.execute called before start() or after stop()")
        timeout = self.spec.timeout if timeout is None else timeout
        workdir = self._host_path(cwd) if cwd else self.spec.cwd
        if self._bwrap is None and not os.path.isdir(workdir):
            return ExecResult(output=f"cannot run in {workdir}: not an existing folder\n", returncode=1)
        r = self._execute_in_shell(command, timeout, env, self._inside(workdir))
        return ExecResult(output=r.output + (r.note and r.note + "\n"), returncode=r.returncode,
                          timed_out=r.timed_out, duration_s=r.duration_s)

    def _execute_in_shell(self, command: str, timeout: float, env: dict[str, str] | None,
                          cwd: str) -> ShellResult:
        """A subshell of the first idle `exec` shell (commands from two threads run side by side)."""
        for i in itertools.count():
            result = self.shell(f"exec{i or ''}").try_run(command, timeout, subshell=True, env=env, cwd=cwd)
            if result is not None:
                return result
        raise AssertionError("unreachable")

    # -- files -------------------------------------------------------------------------------------

    def _host_path(self, path: str) -> str:
        """Relative paths resolve against cwd; paths under the task's declared cwd map into it."""
        if not os.path.isabs(path):
            return os.path.join(self.spec.cwd, path)
        declared = self.task_cwd.rstrip("/")
        if declared and declared != self.spec.cwd and (path == declared or path.startswith(declared + "/")):
            return self.spec.cwd + path[len(declared):]
        return path

    def read_file(self, path: str) -> bytes:
        with open(self._host_path(path), "rb") as f:
            return f.read()

    def write_file(self, path: str, data: bytes, mode: int | None = None) -> None:
        """Write `data`, creating parent folders. `mode=None` keeps an existing file's mode (new: 0644)."""
        target = self._host_path(path)
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        existed = os.path.exists(target)
        with open(target, "wb") as f:
            f.write(data)
        if mode is not None or not existed:
            os.chmod(target, 0o644 if mode is None else mode)

    def copy_in(self, src: Path, dest: str) -> None:
        _copy(Path(src), Path(self._host_path(dest)))

    def copy_out(self, src: str, dest: Path) -> None:
        _copy(Path(self._host_path(src)), Path(dest))


def _copy(src: Path, dest: Path) -> None:
    """Folders: their contents into `dest`. Files: to `dest`, or into it when `dest` is a folder."""
    if src.is_dir():
        shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True)
        return
    if dest.is_dir():
        dest = dest / src.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dest)
