"""Stale local sandboxes: found by their label, their processes killed by marker, live ones left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from mimo_core.environments.local.cleanup import (
    LABEL_FILE,
    SandboxLabel,
    cleanup,
    force_remove,
    read_label,
    remove_tree,
)
from mimo_core.environments.local.procs import SANDBOX_VAR, marked_pids
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
    make_env: MakeEnv,
    tmp_path: Path,
) -> None:
    root = tmp_path / "envs"
    live = make_env(root=root)
    live.execute("sleep 300 >/dev/null 2>&1 &")
    stale = root / "mimo-stale"
    stale.mkdir()
    stale_id = uuid.uuid4().hex[:12]
    (stale / LABEL_FILE).write_text(
        SandboxLabel(sandbox_id=stale_id, host=os.uname().nodename, pid=_dead_pid()).model_dump_json()
    )
    orphan = subprocess.Popen(["/bin/sleep", "301"], env={**os.environ, SANDBOX_VAR: stale_id}, start_new_session=True)
    unlabelled = root / "mimo-not-ours"
    unlabelled.mkdir()
    assert marked_pids(SANDBOX_VAR, stale_id) == [orphan.pid]
    assert cleanup([str(root)], stale_only=True) == 1
    try:
        orphan.wait(timeout=10)  # killed
    except subprocess.TimeoutExpired:
        state = Path(f"/proc/{orphan.pid}/status").read_text().splitlines()[:3]
        raise AssertionError(
            f"the stale sandbox's process survived the sweep: {state}, found now: {marked_pids(SANDBOX_VAR, stale_id)}"
        ) from None
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


def _big_labelled_tree(base: Path, folders: int = 40, files: int = 100) -> None:
    for i in range(folders):
        (base / f"d{i}").mkdir(parents=True)
        for j in range(files):
            (base / f"d{i}" / f"f{j}").write_bytes(b"x")
    (base / LABEL_FILE).write_text("{}")


def _entries(base: Path) -> int:
    try:
        return len(os.listdir(base))
    except FileNotFoundError:
        return 0


def test_a_removal_cut_short_by_a_kill_never_leaves_an_unlabelled_folder(tmp_path: Path) -> None:
    """The sweep only removes labelled folders: the label must be the last thing to go. The remover is
    killed as soon as it has removed its first folder (seen from here), whatever the machine's speed."""
    partial = False
    for attempt in range(5):
        base = tmp_path / f"mimo-{attempt}"
        _big_labelled_tree(base)
        full = _entries(base)
        pid = os.fork()  # a child that only removes: no interpreter start-up to wait for
        if pid == 0:
            try:
                remove_tree(str(base))
            finally:
                os._exit(0)
        deadline = time.monotonic() + 30
        while _entries(base) == full and time.monotonic() < deadline:
            pass  # busy: the kill must land while the removal is under way
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        if base.exists():
            assert (base / LABEL_FILE).is_file(), sorted(p.name for p in base.iterdir())[:5]
            partial = 0 < _entries(base) < full  # some of it went, the label stayed
        if partial:
            break
    assert partial  # a kill landed mid-removal, so the check above ran on a half-removed folder


def test_removing_a_symlink_never_changes_its_targets_mode(tmp_path: Path) -> None:
    """An agent's link to a host file in a folder it made read-only: removing it chmods the folder, not
    the host file."""
    host_file = tmp_path / "host-secret"
    host_file.write_text("x")
    host_file.chmod(0o600)
    base = tmp_path / "mimo-sandbox"
    (base / "ro").mkdir(parents=True)
    (base / "ro" / "link").symlink_to(host_file)
    (base / "ro").chmod(0o555)
    force_remove(os.unlink, str(base / "ro" / "link"), None)
    assert not (base / "ro" / "link").is_symlink()
    assert host_file.stat().st_mode & 0o777 == 0o600


def test_a_killed_runners_scratch_folder_is_swept_and_a_live_ones_kept(tmp_path: Path) -> None:
    """Base repositories and verifier evidence live in a labelled per-process folder: a runner killed
    before its exit handler leaves it, and the next sweep of the temp dir removes it."""
    code = (
        "import os, sys; from mimo_core.environments.local.cleanup import process_scratch; "
        "d = process_scratch(); (d / 'base-repos').mkdir(); print(d, flush=True); "
        "sys.stdin.read() if sys.argv[1] == 'wait' else os.kill(os.getpid(), 9)"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    killed = subprocess.run([sys.executable, "-c", code, "kill"], env=env, capture_output=True, text=True)
    assert killed.returncode == -9
    dead = Path(killed.stdout.strip())
    live_proc = subprocess.Popen(
        [sys.executable, "-c", code, "wait"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert live_proc.stdout is not None
        live = Path(live_proc.stdout.readline().strip())
        assert dead.parent == live.parent == tmp_path and (dead / "base-repos").is_dir()
        assert cleanup([str(tmp_path)], stale_only=True) == 1
        assert not dead.exists() and (live / "base-repos").is_dir()
    finally:
        live_proc.communicate("")
    assert live_proc.returncode == 0 and not live.exists()  # removed by its own exit handler


def test_removal_leaves_alone_every_folder_not_known_to_be_ours(tmp_path: Path, monkeypatch) -> None:
    """A sandbox's removal is a `rm -rf` of the runner: a wrong path (empty, relative, the checkout the runner
    was started in, a link) must never delete what is not a sandbox."""
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    (checkout / "README.md").write_text("x")
    labelled = tmp_path / "mimo-sandbox"
    (labelled / "scratch").mkdir(parents=True)
    (labelled / LABEL_FILE).write_text("{}")
    (tmp_path / "link").symlink_to(labelled)
    monkeypatch.chdir(checkout)
    for path in ("", ".", "..", str(checkout), str(checkout / ".git"), str(tmp_path / "link")):
        remove_tree(path)
    assert sorted(p.name for p in checkout.iterdir()) == [".git", "README.md"]
    assert (labelled / "scratch").is_dir()
    remove_tree(str(labelled / "scratch"))  # a labelled sandbox's own folder goes
    assert not (labelled / "scratch").exists() and labelled.is_dir()
    remove_tree(str(labelled))
    assert not labelled.exists()


def test_a_relative_sandbox_root_is_made_absolute_and_still_cleaned_up(tmp_path: Path, monkeypatch) -> None:
    from mimo_core.config import EnvironmentConfig
    from mimo_core.environments.base import SandboxSpec
    from mimo_core.environments.local.environment import LocalEnvironment

    monkeypatch.chdir(tmp_path)
    env = LocalEnvironment(SandboxSpec(cwd="/testbed"), EnvironmentConfig(backend_kwargs={"root": "envs"}))
    env.start()
    base = env.base or ""
    assert os.path.isabs(base) and base.startswith(str(tmp_path / "envs"))
    env.stop()
    assert not os.path.exists(base)
