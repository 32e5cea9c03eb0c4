"""The local backend: each rollout works in its own fresh folder on this host, optionally inside bubblewrap.

Tasks declare an absolute cwd such as `/testbed` that does not exist here, so the backend maps it to a
fresh host folder: after `start()`, `spec.cwd` is the real host path of the working directory, and any
path under the task's declared cwd (e.g. `/testbed/src/x.py`) given to `execute(cwd=...)` or the file
methods is mapped into it. Commands themselves are not rewritten: prompts should use `{{cwd}}`. With
`sandbox: bwrap` the work folder is also bound at the task's cwd, so commands see `/testbed` as in a
container (`task_cwd.py`).

Layout of one rollout (all removed by `stop()`):
    <root>/mimo-XXXX/work     the working directory (`spec.cwd`); `spec.seed_dir` is copied here
    <root>/mimo-XXXX/scratch  `scratch_dir`: framework state (bash session files), outside cwd
    <root>/mimo-XXXX/home     `$HOME` for commands, so rollouts never share dotfiles or caches
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mimo_core.environments.base import ExecResult, SandboxSpec
from mimo_core.environments.task_cwd import bwrap_root_args, bwrap_task_cwd_args, missing_cwd_note, sandbox_path
from mimo_core.environments.tool_path import tool_path
from mimo_core.errors import SandboxError

if TYPE_CHECKING:
    from mimo_core.config import EnvironmentConfig

# Host variables commands may see. Everything else (API keys above all) stays out of the agent's reach.
_INHERITED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "LOGNAME", "SHELL")
_QUIET = {"TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "MANPAGER": "cat", "NO_COLOR": "1"}
_MAX_CAPTURE = 8 * 1024 * 1024  # bytes of output kept per command: head and tail halves


class LocalEnvironment:
    """One rollout's working directory on this host. `sandbox: bwrap` confines commands with bubblewrap."""

    def __init__(self, spec: SandboxSpec, config: EnvironmentConfig, **_: Any) -> None:
        self.spec = spec.model_copy(deep=True)
        self.config = config
        self.task_cwd = self.spec.cwd  # the cwd the task declared; mapped to the host working dir
        self.sandbox = config.sandbox
        self.root = config.backend_kwargs.get("root") or tempfile.gettempdir()
        self.base: str | None = None
        self.scratch_dir = ""
        self.home = ""
        self._env: dict[str, str] = {}
        self._bwrap_prefix: list[str] = []
        self._pgids: set[int] = set()

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        if self.sandbox == "bwrap" and shutil.which("bwrap") is None:
            raise SandboxError(
                "environment.sandbox is 'bwrap' but bubblewrap is not installed: "
                "apt-get install bubblewrap (or set sandbox: none)"
            )
        Path(self.root).mkdir(parents=True, exist_ok=True)
        self.base = tempfile.mkdtemp(prefix="mimo-", dir=self.root)
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
        if self.sandbox == "bwrap":
            self._bwrap_prefix = self._bwrap_args()
            probe = self.execute("true", timeout=30)
            if probe.returncode != 0:
                raise SandboxError(f"bubblewrap cannot start a sandbox here: {probe.output.strip()}")

    def _bwrap_args(self) -> list[str]:
        """Read-only host, private /tmp, fresh /proc and /dev, no network; only our folders writable.

        The root holding every rollout's folders is hidden behind an empty tmpfs, so one rollout can
        neither read nor write another's.
        """
        root = os.path.realpath(self.root)
        args = ["bwrap", *bwrap_root_args(), "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                "--tmpfs", root, "--unshare-net", "--die-with-parent"]
        for d in (self.spec.cwd, self.scratch_dir, self.home):
            args += ["--bind", d, d]
        return args + bwrap_task_cwd_args(self.task_cwd, self.spec.cwd, writable_roots=("/tmp", root))

    def stop(self) -> None:
        for pgid in self._pgids:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._pgids.clear()
        if self.base is not None:
            shutil.rmtree(self.base, onerror=_force_remove)
            self.base = None

    # -- commands ----------------------------------------------------------------------------------

    def execute(
        self, command: str, timeout: float | None = None, cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        """Run `bash -c command` (no profile), stdout+stderr merged into one file-backed stream.

        Output goes to a temp file, not a pipe, so a background job that keeps the stream open cannot
        hold the call hostage: we wait for bash only. A timeout kills the whole process group.
        """
        if self.base is None:
            raise SandboxError("LocalEnvironment.execute called before start() or after stop()")
        timeout = self.spec.timeout if timeout is None else timeout
        workdir = self._host_path(cwd) if cwd else self.spec.cwd
        run_env = self._env if not env else {**self._env, **env}
        if self._bwrap_prefix:
            argv = [*self._bwrap_prefix, "--chdir", sandbox_path(workdir, self.task_cwd, self.spec.cwd),
                    "bash", "-c", command]
            popen_cwd = self.spec.cwd
        else:
            argv = ["bash", "-c", command]
            popen_cwd = workdir
        start = time.monotonic()
        with tempfile.TemporaryFile(dir=self.scratch_dir) as out:
            try:
                proc = subprocess.Popen(
                    argv, cwd=popen_cwd, env=run_env, stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT, close_fds=True, start_new_session=True,
                )
            except (FileNotFoundError, NotADirectoryError) as e:
                return ExecResult(output=f"cannot run in {workdir}: {e.strerror}\n", returncode=1)
            self._pgids.add(proc.pid)
            timed_out = not _wait_exit(proc, timeout)
            if timed_out:
                _kill_group(proc.pid)
            returncode = proc.wait()
            if timed_out or not _group_alive(proc.pid):
                self._pgids.discard(proc.pid)
            output = _read_capture(out)
        if not self._bwrap_prefix:
            output += missing_cwd_note(command, returncode, self.task_cwd, self.spec.cwd)
        return ExecResult(output=output, returncode=returncode, timed_out=timed_out,
                          duration_s=time.monotonic() - start)

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


def _wait_exit(proc: subprocess.Popen, timeout: float) -> bool:
    """Block until the process exits or the timeout passes; True if it exited. A pidfd wakes us the
    moment it exits, where Popen.wait(timeout) sleep-polls and adds wall time to every command."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux ≥ 5.3: fall back to polling
        try:
            proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout)
        return bool(ready)
    finally:
        os.close(pidfd)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _read_capture(f: Any) -> str:
    size = f.seek(0, os.SEEK_END)
    f.seek(0)
    if size <= _MAX_CAPTURE:
        data = f.read()
    else:
        half = _MAX_CAPTURE // 2
        head = f.read(half)
        f.seek(size - half)
        data = head + f"\n[... {size - 2 * half} bytes of output dropped ...]\n".encode() + f.read()
    return data.decode("utf-8", errors="replace")


def _force_remove(func: Any, path: str, _exc: Any) -> None:
    """rmtree helper: files the agent made read-only (or read-only folders) must go too."""
    try:
        os.chmod(os.path.dirname(path), 0o755)
        os.chmod(path, 0o755)
        func(path)
    except OSError:
        pass
