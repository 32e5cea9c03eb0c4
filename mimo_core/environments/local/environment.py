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
    <root>/mimo-XXXX/scratch  `scratch_dir`: framework state (scripts, each call's output), outside cwd
    <root>/mimo-XXXX/home     `$HOME` for commands, so rollouts never share dotfiles or caches
    <root>/mimo-XXXX/ctl      the host's side of the sandbox (FIFOs, files handed in): read-only inside
Grading gets new scratch and home folders (`scratch-grading`, `home-grading`), made once every process
of the agent is dead (`begin_grading`).

Every process the sandbox starts carries `MIMO_SANDBOX=<id>`; `stop()` kills all of them, including
background jobs that called `setsid` or `nohup`. With `sandbox: bwrap` ONE bubblewrap sandbox holds each
phase of the rollout (see bwrap.py): its persistent shells and every `execute`. The grading seam is
`grading.py`.
"""

from __future__ import annotations

import itertools
import os
import secrets
import shutil
import socket
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from mimo_core.base.host_cancel import copy_tree
from mimo_core.environments import live
from mimo_core.environments.base import Capabilities, ExecResult, SandboxSpec
from mimo_core.environments.budgets import (
    BudgetWatch,
    Exceeded,
    disk_exceeded,
    memory_exceeded,
    punch_middle,
    tree_usage,
)
from mimo_core.environments.local.bwrap import BwrapSandbox, SandboxFolders, bwrap_args
from mimo_core.environments.local.cgroups import Limits
from mimo_core.environments.local.cleanup import LABEL_FILE, REMOVED_FILE, own_label, remove_tree, write_label
from mimo_core.environments.local.files import LocalFiles
from mimo_core.environments.local.grading import LocalGrading
from mimo_core.environments.local.procs import (
    CALL_VAR,
    SANDBOX_VAR,
    kill_marked,
    popen_stream,
    read_capture,
)
from mimo_core.environments.local.task_cwd import bwrap_cwd_problem, missing_cwd_note, sandbox_path
from mimo_core.environments.shell import MAX_CAPTURE, ShellResult, ShellSession, ShellStream
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
    # With sandbox: bwrap, each sandbox's own cgroup caps its processes (a fork bomb stays inside), unless
    # the row sets its own; a row's memory_mb and cpus are enforced the same way (cgroups.py).
    pids_limit: int | None = Field(default=4096, gt=0)


class LocalEnvironment(LocalGrading, LocalFiles):
    """One rollout's working directory on this host. `sandbox: bwrap` confines it with bubblewrap."""

    inline_output = False  # shell output files are read straight from the host

    options_model = LocalOptions  # what environment.backend_kwargs may hold, checked at config load

    @staticmethod
    def capabilities(config: EnvironmentConfig) -> Capabilities:
        confined = config.sandbox == "bwrap"
        return Capabilities(
            host_files=not confined,
            image_tasks=False,
            confined=confined,
            network_isolation=confined,
            host_mounts=confined,
        )

    @staticmethod
    def cwd_problem(config: EnvironmentConfig, task_cwd: str) -> str | None:
        """Why this backend cannot give a rollout `task_cwd` as its working directory, or None."""
        return bwrap_cwd_problem(task_cwd) if config.sandbox == "bwrap" else None

    @staticmethod
    def sweep_stale(configs: list[EnvironmentConfig]) -> None:
        """Sandbox folders (and their processes) of dead runners, in every root these configs use."""
        from mimo_core.environments.local.cleanup import cleanup, default_root

        roots = [os.path.abspath(str(c.backend_kwargs.get("root") or default_root())) for c in configs]
        cleanup(list(dict.fromkeys(roots)), stale_only=True)

    def __init__(self, spec: SandboxSpec, config: EnvironmentConfig, **_: Any) -> None:
        self.spec = spec.model_copy(deep=True)
        self.config = config
        self.task_cwd = self.spec.cwd  # the cwd the task declared; mapped to the host working dir
        self.sandbox = config.sandbox
        options = LocalOptions.model_validate(config.backend_kwargs)
        self.root = os.path.abspath(options.root or tempfile.gettempdir())
        self.limits = Limits(
            pids=self.spec.pids_limit or options.pids_limit, memory_mb=self.spec.memory_mb, cpus=self.spec.cpus
        )
        self.base: str | None = None
        self.sandbox_id = secrets.token_hex(8)
        self.scratch_dir = ""
        self.home = ""
        self._ctl = ""
        self._env: dict[str, str] = {}
        self._bwrap: BwrapSandbox | None = None
        self._sessions: dict[str, ShellSession] = {}
        self._kill_lock = threading.Lock()  # no shell starts while interrupt() is killing the sandbox's processes
        self._view_of: LocalEnvironment | None = None  # set on a read-only view: the rollout it looks at
        self._watch: BudgetWatch | None = None  # memory and disk budgets (budgets.py)
        self._oom_kills = 0  # of this rollout's earlier sandboxes (the agent's, once grading has its own)

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
        self._ctl = os.path.join(self.base, "ctl")
        for d in (work, self.scratch_dir, self.home, self._ctl):
            os.mkdir(d)
        self.spec.cwd = work
        if self.spec.seed_dir:
            seed = Path(self.spec.seed_dir)
            if not seed.is_dir():
                raise SandboxError(f"seed_dir {seed} is not a folder (task {self.spec.labels or ''})")
            copy_tree(seed, work)  # (stops when the run does)
        self._env = {k: os.environ[k] for k in _INHERITED if k in os.environ}
        self._env["PATH"] = tool_path(self._env.get("PATH"))
        self._env.update(_QUIET, HOME=self.home)
        self._env.update(self.spec.env)
        self._env[SANDBOX_VAR] = self.sandbox_id
        if self.sandbox == "bwrap":
            self._start_bwrap()
        self._watch = BudgetWatch(self.sandbox_id, self._budget_check, self._end_for_budget, tick=self._trim_outputs)
        self._watch.start()

    # -- budgets (budgets.py): the kernel's OOM kills in the sandbox's cgroup, du of its folders ----------

    def _budget_check(self) -> Exceeded | None:
        bw = self._bwrap
        found = memory_exceeded(self.limits.memory_mb, self._oom_kills + (bw.oom_kills() if bw is not None else 0))
        base = self.base
        if found is None and self.spec.storage_mb and base is not None:
            found = disk_exceeded(self.spec.storage_mb, tree_usage(base) or 0)
        return found

    def _end_for_budget(self) -> None:
        bw = self._bwrap
        if bw is not None:
            bw.kill_all()  # PID 1 and with it the whole sandbox: the agent's next command fails
        else:
            kill_marked(SANDBOX_VAR, self.sandbox_id)

    def _trim_outputs(self) -> None:
        """A command's output file keeps on disk only what is read of it (its head and tail)."""
        try:
            entries = [e.path for e in os.scandir(self.scratch_dir) if e.name.startswith(".sh-")]
        except OSError:
            return
        for path in entries:
            punch_middle(path, MAX_CAPTURE // 2)

    def budget_exceeded(self) -> Exceeded | None:
        """The budget this rollout's sandbox went past (it was ended for it), or None."""
        return self._watch.check_now() if self._watch is not None else None

    def _retire_bwrap(self) -> None:
        bw, self._bwrap = self._bwrap, None
        if bw is not None:
            bw.stop()  # its PID namespace, and every process in it, dies with it
            self._oom_kills += bw.oom_kills_at_stop

    def _folders(self) -> SandboxFolders:
        return SandboxFolders(
            work=self.spec.cwd,
            scratch=self.scratch_dir,
            home=self.home,
            ctl=self._ctl,
            task_cwd=self.task_cwd,
            network=self.spec.network,
            mounts=dict(self.spec.mounts),
        )

    def _start_bwrap(self, read_only: bool = False) -> None:
        folders = self._folders()
        self._bwrap = BwrapSandbox(
            bwrap_args(folders, read_only=read_only),
            self._env,
            sandbox_path(self.spec.cwd, self.task_cwd, self.spec.cwd),
            folders,
            self.limits,
        )
        self._bwrap.start()

    def _inside(self, host_path: str) -> str:
        """A host path as the sandboxed commands see it (the work folder is bound at the task's cwd)."""
        return sandbox_path(host_path, self.task_cwd, self.spec.cwd) if self._bwrap is not None else host_path

    def interrupt(self) -> None:
        """Kill every process of this rollout now (any thread): a running command returns at once."""
        with self._kill_lock:
            for name, session in list(self._sessions.items()):
                if name.startswith("exec"):  # execute's shells die too: later commands get new ones
                    session.renew()
            if self._bwrap is not None:  # (bwrap itself carries the marker: no host-side scan here)
                self._bwrap.kill_commands()
                return
            kill_marked(SANDBOX_VAR, self.sandbox_id)

    def vanished(self) -> bool:
        """The sandbox is being removed, or was, from outside (`mimoagent cleanup --force`, or by hand: its
        label is gone) while it was running. (Under bwrap the agent cannot reach either file.)"""
        return self.base is not None and (
            os.path.exists(os.path.join(self.base, REMOVED_FILE))
            or not os.path.exists(os.path.join(self.base, LABEL_FILE))
        )

    def _check_present(self) -> None:
        if self.vanished():
            raise SandboxError(
                f"the sandbox folder {self.base} was removed while the rollout was running "
                "(by mimoagent cleanup, or by hand)"
            )

    def _close_sessions(self) -> None:
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()

    def stop(self) -> None:
        self._close_sessions()
        sandboxed = self._bwrap is not None
        if self._watch is not None:
            self._watch.stop()
        self._retire_bwrap()
        if self._view_of is not None:  # a read-only view owns only its scratch folder
            remove_tree(self.scratch_dir)
            self.base = None
            return
        if self.base is not None:
            if not sandboxed:  # background jobs, `setsid`/`nohup` ones included, carry the marker
                kill_marked(SANDBOX_VAR, self.sandbox_id)
            remove_tree(self.base)
            self.base = None
        live.untrack(self)

    def listen_inside(self) -> socket.socket | None:
        """A listening socket on the sandbox's own 127.0.0.1 (its network namespace), for a server of the
        runner that the sandbox must reach (a CLI agent's recording proxy); None without bwrap, where the
        sandbox's loopback is the host's."""
        if self._bwrap is None or self._bwrap.child_pid is None:
            return None
        from mimo_core.environments.local.netns_socket import listen_in_netns

        return listen_in_netns(self._bwrap.child_pid)

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
        self._check_present()
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
        self,
        command: str,
        timeout: float | None = None,
        cwd: str | None = None,
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
        self._check_present()
        timeout = self.spec.timeout if timeout is None else timeout
        workdir = self._host_path(cwd) if cwd else self.spec.cwd
        if self._bwrap is None and not os.path.isdir(workdir):
            return ExecResult(output=f"cannot run in {workdir}: not an existing folder\n", returncode=1)
        r = self._execute_in_shell(command, timeout, env, self._inside(workdir))
        return ExecResult(
            output=r.output + (r.note and r.note + "\n"),
            returncode=r.returncode,
            timed_out=r.timed_out,
            duration_s=r.duration_s,
        )

    def _execute_in_shell(self, command: str, timeout: float, env: dict[str, str] | None, cwd: str) -> ShellResult:
        """A subshell of the first idle `exec` shell (commands from two threads run side by side)."""
        for i in itertools.count():
            result = self.shell(f"exec{i or ''}").try_run(command, timeout, subshell=True, env=env, cwd=cwd)
            if result is not None:
                return result
        raise AssertionError("unreachable")

    def _host_path(self, path: str) -> str:
        """Relative paths resolve against cwd; paths under the task's declared cwd map into it."""
        if not os.path.isabs(path):
            return os.path.join(self.spec.cwd, path)
        declared = self.task_cwd.rstrip("/")
        if declared and declared != self.spec.cwd and (path == declared or path.startswith(declared + "/")):
            return self.spec.cwd + path[len(declared) :]
        return path
