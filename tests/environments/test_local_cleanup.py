"""Stale local sandboxes: found by their label, their processes killed by marker, live ones left alone."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from mimo_core.environments.local_cleanup import LABEL_FILE, SandboxLabel, cleanup, read_label
from mimo_core.environments.local_procs import SANDBOX_VAR
from tests.environments.conftest import MakeEnv


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_sandbox_carries_a_label_naming_its_runner(make_env: MakeEnv) -> None:
    env = make_env(labels={"mimoagent.run_id": "run-1"})
    label = read_label(Path(env.base or ""))
    assert label is not None and label.pid == os.getpid() and label.sandbox_id == env.sandbox_id
    assert label.labels["mimoagent.run_id"] == "run-1"
    assert not Path(env.spec.cwd, LABEL_FILE).exists()  # outside the agent's folders


def test_the_sweep_removes_dead_runners_sandboxes_with_their_processes_and_keeps_live_ones(
    make_env: MakeEnv, tmp_path: Path,
) -> None:
    root = tmp_path / "envs"
    live = make_env(root=root)
    live.execute("sleep 300 >/dev/null 2>&1 &")
    stale = root / "mimo-stale"
    stale.mkdir()
    (stale / LABEL_FILE).write_text(SandboxLabel(sandbox_id="deadbeef", host=os.uname().nodename,
                                                 pid=_dead_pid()).model_dump_json())
    orphan = subprocess.Popen(["sleep", "301"], env={**os.environ, SANDBOX_VAR: "deadbeef"},
                              start_new_session=True)
    unlabelled = root / "mimo-not-ours"
    unlabelled.mkdir()
    assert cleanup([str(root)], stale_only=True) == 1
    orphan.wait(timeout=5)  # killed
    assert orphan.returncode == -9
    assert not stale.exists() and unlabelled.exists() and Path(live.spec.cwd).exists()
    assert live.execute("echo alive").output == "alive\n"
    assert cleanup([str(root)], stale_only=True) == 0


def test_cleanup_of_one_run_leaves_other_runs(make_env: MakeEnv, tmp_path: Path) -> None:
    root = tmp_path / "envs"
    a = make_env(root=root, labels={"mimoagent.run_id": "a"})
    b = make_env(root=root, labels={"mimoagent.run_id": "b"})
    a.execute("sleep 302 >/dev/null 2>&1 &")
    assert cleanup([str(root)], run_id="a", stale_only=False) == 1
    assert not Path(a.spec.cwd).exists() and Path(b.spec.cwd).exists()
    time.sleep(0.1)
    a.base = None  # already removed: the fixture's stop() has nothing left to do
