"""The local backend's grading seam (`GradingSeam`): the agent's phase ended (its processes killed, with
bwrap its whole sandbox), grading in new scratch and home folders, the verifier's processes ended before
its reward is read, and a read-only view of the final state for a judge. Kept apart from the sandbox's
lifecycle (environment.py) because it is what keeps a hostile agent away from its own grade."""

from __future__ import annotations

import tempfile
from typing import Any, Self

from mimo_core.environments.local.cleanup import remove_tree
from mimo_core.environments.local.procs import SANDBOX_VAR, kill_marked
from mimo_core.errors import SandboxError


class LocalGrading:
    """Grading methods of `LocalEnvironment` (which provides the attributes and helpers used here)."""

    base: str | None
    spec: Any
    config: Any
    sandbox: str
    sandbox_id: str
    task_cwd: str
    scratch_dir: str
    home: str
    _ctl: str
    _env: dict[str, str]
    _bwrap: Any
    _watch: Any
    _view_of: Any

    def __init__(self, spec: Any, config: Any) -> None:
        raise NotImplementedError

    def _check_present(self) -> None:
        raise NotImplementedError

    def _close_sessions(self) -> None:
        raise NotImplementedError

    def _retire_bwrap(self) -> None:
        raise NotImplementedError

    def _start_bwrap(self, read_only: bool = False) -> None:
        raise NotImplementedError

    def begin_grading(self) -> int:
        """End the agent's phase: every process it left is killed (with bwrap, its whole PID namespace
        goes), then scratch and home are new folders the agent never saw, in a new sandbox over the same
        work folder. Without bwrap only the processes carrying the sandbox's marker can be found."""
        if self.base is None:
            raise SandboxError("LocalEnvironment.begin_grading called before start() or after stop()")
        self._check_present()
        self._close_sessions()
        if self._watch is not None and (over := self._watch.check_now()) is not None:  # before home goes
            raise SandboxError(f"the sandbox was ended for its {over.kind} budget: {over.detail}")
        if self._bwrap is not None:
            alive = self._bwrap.end_processes()
            self._retire_bwrap()
        else:
            alive = kill_marked(SANDBOX_VAR, self.sandbox_id)
        for old in (self.scratch_dir, self.home):
            remove_tree(old)
        try:
            self.scratch_dir = tempfile.mkdtemp(prefix="scratch-grading-", dir=self.base)
            self.home = tempfile.mkdtemp(prefix="home-grading-", dir=self.base)
        except FileNotFoundError:  # the folder went from under us (a forced cleanup racing this)
            self._check_present()
            raise
        self._env["HOME"] = self.home
        if self.sandbox == "bwrap":
            self._start_bwrap()
        return alive

    def mark_system_baseline(self) -> None:
        """Nothing to mark: see `discard_system_changes`."""

    def discard_system_changes(self, keep: list[str]) -> list[str]:
        """What the agent changed outside `keep` and the verifier would see: always [] here, for two reasons.

        With `sandbox: bwrap` nothing outside the work folder survives into grading: the host's system
        folders (/usr, /etc, ...) are bound read-only, and `begin_grading` starts a new sandbox whose
        home, scratch, /tmp, /var (with /var/tmp) and /run are new and empty (private tmpfs; the agent's
        are gone with its sandbox), so there is nothing to put back. Without a sandbox the agent runs as
        the runner's user on this host: what it wrote outside its folders (a writable site-packages, the
        user's ~/.local, the host's /tmp) is not tracked and cannot be seen here; that mode is not
        confined at all (capabilities: confined=False)."""
        return []

    def end_processes(self) -> int:
        """Kill every process now running in the sandbox (the verifier left), before its reward is read."""
        self._close_sessions()
        if self._bwrap is not None:
            return self._bwrap.end_processes()
        return kill_marked(SANDBOX_VAR, self.sandbox_id)

    def read_only_view(self) -> Self | None:
        """A second sandbox over the same work folder and home, both read-only, with a scratch of its own
        (a judge's tools: nothing it runs can change the final state). None without bwrap."""
        if self.sandbox != "bwrap" or self.base is None:
            return None
        view = type(self)(self.spec, self.config)
        view.task_cwd, view.base, view._ctl, view.home = self.task_cwd, self.base, self._ctl, self.home
        view.spec.cwd = self.spec.cwd
        view.scratch_dir = tempfile.mkdtemp(prefix="scratch-view-", dir=self.base)
        view._env = {**self._env, SANDBOX_VAR: view.sandbox_id}
        view._view_of = self
        view._start_bwrap(read_only=True)
        return view
