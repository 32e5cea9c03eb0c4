"""LocalEnvironment against real processes and real files."""

from __future__ import annotations

import os
import socket
import stat
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mimo_core.config import EnvironmentConfig
from mimo_core.environments.base import SandboxSpec, make_environment
from mimo_core.environments.local import LocalEnvironment
from mimo_core.errors import SandboxError
from tests.environments.conftest import MakeEnv
from tests.host_needs import needs_bwrap


def _dead(pid: int) -> bool:
    """Gone, or a zombie waiting for a reaper (it holds no resources and runs nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def _wait_dead(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if _dead(pid):
            return True
        time.sleep(0.02)
    return False


def test_task_cwd_maps_to_a_fresh_host_work_dir(make_env: MakeEnv, tmp_path: Path) -> None:
    env = make_env(cwd="/testbed")
    assert env.spec.cwd != "/testbed" and Path(env.spec.cwd).is_dir()
    assert env.spec.cwd.startswith(str(tmp_path / "envs"))
    assert env.execute("pwd").output.strip() == env.spec.cwd
    assert not Path(env.scratch_dir).is_relative_to(env.spec.cwd)
    env.write_file("/testbed/pkg/mod.py", b"x = 1\n")
    assert (Path(env.spec.cwd) / "pkg/mod.py").read_bytes() == b"x = 1\n"
    assert env.execute("pwd", cwd="/testbed/pkg").output.strip() == f"{env.spec.cwd}/pkg"


def test_make_environment_builds_local_backend() -> None:
    env = make_environment(EnvironmentConfig(environment_class="local"), SandboxSpec())
    try:
        env.start()
        assert env.execute("echo hi").output == "hi\n"
    finally:
        env.stop()


def test_two_environments_do_not_share_working_dirs(make_env: MakeEnv) -> None:
    a, b = make_env(), make_env()
    assert a.spec.cwd != b.spec.cwd and a.scratch_dir != b.scratch_dir
    a.execute("echo mine > f.txt")
    assert b.execute("ls").output == ""
    assert b.execute("cat f.txt").returncode != 0


def test_seed_dir_is_copied_and_spec_env_is_set(make_env: MakeEnv, tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    (seed / "src").mkdir(parents=True)
    (seed / "src" / "a.py").write_text("print('a')\n")
    env = make_env(seed_dir=str(seed), env={"TASK_VAR": "hello world"})
    assert env.execute("cat src/a.py; echo $TASK_VAR").output == "print('a')\nhello world\n"
    env.execute("echo changed > src/a.py")
    assert (seed / "src" / "a.py").read_text() == "print('a')\n"


def test_output_merges_stderr_and_keeps_exit_code(make_env: MakeEnv) -> None:
    result = make_env().execute("echo out; echo err >&2; exit 3")
    assert result.output == "out\nerr\n"
    assert result.returncode == 3 and not result.timed_out


def test_per_call_env_and_cwd(make_env: MakeEnv) -> None:
    env = make_env()
    os.mkdir(os.path.join(env.spec.cwd, "sub"))
    out = env.execute("pwd; echo $EXTRA", cwd="sub", env={"EXTRA": "x"}).output.split()
    assert out == [f"{env.spec.cwd}/sub", "x"]
    missing = env.execute("pwd", cwd="nope")
    assert missing.returncode != 0 and "nope" in missing.output


def test_not_a_login_shell_and_host_secrets_stay_out(make_env: MakeEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIMO_TEST_API_KEY", "sk-secret")
    env = make_env()
    for profile in (".bash_profile", ".profile", ".bashrc"):
        Path(env.home, profile).write_text("echo PROFILE_WAS_READ\n")
    out = env.execute("env").output
    assert "PROFILE_WAS_READ" not in out
    assert "sk-secret" not in out
    assert f"HOME={env.home}" in out


def test_timeout_kills_the_process_group_and_env_keeps_working(make_env: MakeEnv) -> None:
    env = make_env()
    start = time.monotonic()
    result = env.execute("echo started; sleep 100 & echo $! > bg.pid; sleep 100", timeout=0.5)
    assert time.monotonic() - start < 5
    assert result.timed_out and "started" in result.output
    bg_pid = int(Path(env.spec.cwd, "bg.pid").read_text())
    assert _wait_dead(bg_pid), "the background child of a timed-out command survived"
    again = env.execute("echo still alive")
    assert again.output == "still alive\n" and again.returncode == 0


def test_background_job_does_not_hold_the_call_and_stop_kills_it(make_env: MakeEnv) -> None:
    env = make_env()
    start = time.monotonic()
    result = env.execute("sleep 60 & echo $! > bg.pid; echo done")
    assert time.monotonic() - start < 5 and result.output == "done\n"
    bg_pid = int(Path(env.spec.cwd, "bg.pid").read_text())
    assert not _dead(bg_pid)
    env.stop()
    assert _wait_dead(bg_pid)


def test_commands_are_subshells_of_one_shell_and_leave_no_state(make_env: MakeEnv) -> None:
    """`execute` forks the rollout's exec shell (`$$` is that shell's pid in a subshell) instead of
    starting a bash per command, and a command's cd, variables and functions stay its own."""
    env = make_env()
    first = env.execute("echo $$; cd /; export LEAK=1; f() { :; }")
    second = env.execute("echo $$; pwd; echo ${LEAK:-none}; type f >/dev/null 2>&1 || echo no-f")
    shell_pid = first.output.strip()
    assert second.output.split() == [shell_pid, env.spec.cwd, "none", "no-f"]
    assert Path(f"/proc/{shell_pid}/cmdline").read_bytes().split(b"\0")[:3] == [b"bash", b"--noprofile", b"--norc"]


def test_a_command_after_interrupt_runs_in_a_new_shell(make_env: MakeEnv) -> None:
    """interrupt() kills every process of the rollout, the exec shell too: the next command must still
    run (grading runs after an agent's time limit interrupted it), not come back as 'shell was killed'."""
    env = make_env()
    old = env.execute("echo $$").output.strip()
    env.interrupt()
    assert _wait_dead(int(old))
    again = env.execute("echo $$; echo ran")
    assert again.returncode == 0 and again.output.split()[1:] == ["ran"] and again.output.split()[0] != old


def test_file_methods_and_copies(make_env: MakeEnv, tmp_path: Path) -> None:
    env = make_env()
    env.write_file("deep/dir/f.sh", b"#!/bin/sh\necho hi\n", mode=0o755)
    assert env.execute("./deep/dir/f.sh").output == "hi\n"
    env.write_file("deep/dir/f.sh", b"#!/bin/sh\necho changed\n")
    assert stat.S_IMODE(os.stat(os.path.join(env.spec.cwd, "deep/dir/f.sh")).st_mode) == 0o755
    assert env.read_file("deep/dir/f.sh") == b"#!/bin/sh\necho changed\n"
    with pytest.raises(FileNotFoundError):
        env.read_file("missing.txt")

    src = tmp_path / "payload"
    (src / "inner").mkdir(parents=True)
    (src / "inner" / "x.txt").write_text("x")
    env.copy_in(src, "/testbed/vendor")
    assert env.execute("cat vendor/inner/x.txt").output == "x"
    env.copy_out("vendor/inner/x.txt", tmp_path / "out" / "x.txt")
    assert (tmp_path / "out" / "x.txt").read_text() == "x"
    env.copy_out("deep", tmp_path / "deep_out")
    assert (tmp_path / "deep_out" / "dir" / "f.sh").exists()


def test_stop_removes_everything_and_is_idempotent(make_env: MakeEnv) -> None:
    env = make_env()
    base = Path(env.spec.cwd).parent
    env.execute("mkdir -p locked/in && touch locked/in/f && chmod -R a-w locked")
    env.stop()
    assert not base.exists()
    env.stop()
    with pytest.raises(SandboxError):
        env.execute("true")


def test_stop_before_start_is_safe() -> None:
    LocalEnvironment(SandboxSpec(), EnvironmentConfig()).stop()


# -- bubblewrap ------------------------------------------------------------------------------------

def test_bwrap_missing_is_a_clear_sandbox_error(make_env: MakeEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SandboxError, match="apt-get install bubblewrap"):
        make_env(sandbox="bwrap")


class _Listener:
    """A TCP server on the host's 127.0.0.1 that accepts and closes connections."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.close()

    def close(self) -> None:
        self.sock.close()


@needs_bwrap
def test_bwrap_has_no_network_unless_the_task_allows_it(make_env: MakeEnv) -> None:
    listener = _Listener()
    try:
        probe = f"exec 3<>/dev/tcp/127.0.0.1/{listener.port} && echo connected"
        assert make_env().execute(probe, timeout=5).output.strip() == "connected"
        # /proc/net/dev lists the sandbox's own namespace (/sys is the host's: it shows host veths)
        inside = make_env(sandbox="bwrap", network=False).execute(
            probe + "; awk -F: 'NR>2{print $1}' /proc/net/dev", timeout=5)
        assert "connected" not in inside.output
        assert inside.output.split()[-1] == "lo" and "veth" not in inside.output
        allowed = make_env(sandbox="bwrap", network=True).execute(probe, timeout=5)
        assert allowed.output.strip() == "connected"
    finally:
        listener.close()


@needs_bwrap
def test_bwrap_only_work_and_scratch_are_writable(make_env: MakeEnv, host_dir: Path) -> None:
    outside = host_dir / "outside"
    outside.mkdir()
    env = make_env(sandbox="bwrap", root=host_dir / "envs")
    result = env.execute(
        f"echo w > in_work.txt && echo s > {env.scratch_dir}/s.txt && echo h > $HOME/h.txt && echo ok; "
        f"echo x > {outside}/escaped.txt; touch /etc/mimo_escape; touch /usr/mimo_escape; echo t > /tmp/t"
    )
    assert result.output.startswith("ok\n")
    assert Path(env.spec.cwd, "in_work.txt").read_text() == "w\n"
    assert Path(env.scratch_dir, "s.txt").read_text() == "s\n"
    assert not (outside / "escaped.txt").exists()
    assert not Path("/etc/mimo_escape").exists() and not Path("/usr/mimo_escape").exists()
    assert "Read-only file system" in result.output
    assert not Path("/tmp/t").exists(), "/tmp inside the sandbox must be private"


@needs_bwrap
def test_bwrap_provides_proc_dev_and_timeouts(make_env: MakeEnv) -> None:
    env = make_env(sandbox="bwrap", env={"TASK_VAR": "v"})
    out = env.execute("test -r /proc/self/status && echo > /dev/null && echo $TASK_VAR && pwd")
    assert out.output.split() == ["v", "/testbed"]  # the work folder, bound at the task's cwd
    result = env.execute("echo started; sleep 100 & echo $! > bg.pid; sleep 100", timeout=0.5)
    assert result.timed_out and "started" in result.output
    assert env.execute("echo again").output == "again\n"


@needs_bwrap
def test_bwrap_environments_are_isolated_from_each_other(make_env: MakeEnv, host_dir: Path) -> None:
    a, b = make_env(sandbox="bwrap", root=host_dir), make_env(sandbox="bwrap", root=host_dir)
    b.execute("echo b > mine.txt")
    result = a.execute(f"cat {b.spec.cwd}/mine.txt; echo x > {b.spec.cwd}/from_a.txt")
    assert "b" not in result.output.split()
    assert not Path(b.spec.cwd, "from_a.txt").exists()


@pytest.mark.parametrize("sandbox", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_commands_from_two_threads_run_side_by_side(make_env: MakeEnv, sandbox: str) -> None:
    """One exec shell (and one sandbox), yet a long command in one thread does not hold up another
    thread's command."""
    env = make_env(sandbox=sandbox)
    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(env.execute, "sleep 2; echo slow", 10)
        time.sleep(0.3)
        start = time.monotonic()
        assert env.execute("echo quick").output == "quick\n"
        assert time.monotonic() - start < 1.5
        assert slow.result().output == "slow\n"


@needs_bwrap
def test_bwrap_one_sandbox_per_rollout_not_per_command(make_env: MakeEnv) -> None:
    """Commands and the bash tool's shell share one bwrap instance: one PID namespace, where a bwrap
    started per command would give each command a namespace of its own."""
    from mimo_core.tools.bash import BashConfig, BashTool

    env = make_env(sandbox="bwrap")
    bash = BashTool(BashConfig(timeout=10))
    probe = "readlink /proc/self/ns/pid"
    seen = {env.execute(probe).output, env.execute(probe).output}
    seen |= {bash.run({"command": probe}, env).output.split("\n")[0] + "\n" for _ in range(2)}
    assert len(seen) == 1 and next(iter(seen)).startswith("pid:["), seen
    assert os.readlink("/proc/self/ns/pid") + "\n" not in seen  # and it is not the host's namespace
