"""LocalEnvironment against real processes and real files: what is particular to it (host folders, the
mapped task cwd, one exec shell, bubblewrap). What every backend does: test_contract_*.py."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from mimo_core.config import EnvironmentConfig
from mimo_core.environments.base import SandboxSpec
from mimo_core.environments.registry import make_environment
from mimo_core.errors import SandboxError
from tests.environments.conftest import MakeEnv
from tests.host_needs import needs_bwrap, unavailable


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


def test_each_sandbox_has_its_own_host_folders_and_home(make_env: MakeEnv) -> None:
    """On this host, folders tell sandboxes apart (that they share no files, that profiles are not read
    and the runner's secrets stay out: the contract suite, test_contract_*.py)."""
    a, b = make_env(), make_env()
    assert a.spec.cwd != b.spec.cwd and a.scratch_dir != b.scratch_dir and a.home != b.home
    assert f"HOME={a.home}\n" in a.execute("env").output


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


# -- bubblewrap ------------------------------------------------------------------------------------


def test_bwrap_missing_is_a_clear_sandbox_error(make_env: MakeEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SandboxError, match="apt-get install bubblewrap"):
        make_env(sandbox="bwrap")


class _Listener:
    """A TCP server on one of the host's addresses (127.0.0.1 by default) that accepts and closes connections."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.sock = socket.create_server((host, 0))
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


def _outward_address() -> str:
    """This host's address on its default route (no packet is sent): what a sandbox with network reaches
    the way it would reach any other machine."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))
        address = probe.getsockname()[0]
    if address.startswith("127."):
        unavailable("this host has no address but loopback: outbound network cannot be told apart")
    return address


@needs_bwrap
def test_bwrap_never_reaches_the_hosts_loopback_and_has_outbound_network_only_when_allowed(make_env: MakeEnv) -> None:
    loopback, outward = _Listener(), _Listener(_outward_address())
    try:
        to_loopback = f"exec 3<>/dev/tcp/127.0.0.1/{loopback.port} && echo connected"
        to_gateway = f"exec 3<>/dev/tcp/10.0.2.2/{loopback.port} && echo connected"
        to_outward = f"exec 3<>/dev/tcp/{outward.sock.getsockname()[0]}/{outward.port} && echo connected"
        assert make_env().execute(to_loopback, timeout=5).output.strip() == "connected"  # no sandbox: the host's
        # /proc/net/dev lists the sandbox's own namespace (/sys is the host's: it shows host veths)
        inside = make_env(sandbox="bwrap", network=False).execute(
            f"{to_loopback}; {to_outward}; awk -F: 'NR>2{{print $1}}' /proc/net/dev", timeout=10
        )
        assert "connected" not in inside.output
        assert inside.output.split()[-1] == "lo" and "veth" not in inside.output
        allowed = make_env(sandbox="bwrap", network=True)
        assert "connected" not in allowed.execute(f"{to_loopback}; {to_gateway}", timeout=10).output
        assert allowed.execute(to_outward, timeout=10).output.strip() == "connected"
    finally:
        loopback.close()
        outward.close()


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


_SLIRP_CHILD = """
import os
from mimo_core.config import EnvironmentConfig
from mimo_core.environments.base import SandboxSpec
from mimo_core.environments.local.environment import LocalEnvironment
env = LocalEnvironment(SandboxSpec(cwd="/testbed", network=True), EnvironmentConfig(sandbox="bwrap",
                       backend_kwargs={"root": os.environ["ROOT"]}))
env.start()
print(env._bwrap._slirp.proc.pid, flush=True)
os.kill(os.getpid(), 9)
"""


@needs_bwrap
def test_a_sandboxes_network_helper_ends_with_its_runner_even_after_sigkill(tmp_path: Path) -> None:
    """slirp4netns runs in its own session (a Ctrl-C meant for the runner must not reach it), so only its
    exit pipe ties it to the runner: a SIGKILLed runner must not leave it running for good."""
    import subprocess
    import sys

    if shutil.which("slirp4netns") is None:
        unavailable("slirp4netns is not installed (apt-get install slirp4netns)")
    out = subprocess.run(
        [sys.executable, "-c", _SLIRP_CHILD],
        env={**os.environ, "ROOT": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return  # gone
        if state == "Z":
            return  # exited, waiting for init to reap it
        time.sleep(0.1)
    os.kill(pid, 9)
    raise AssertionError(f"slirp4netns {pid} outlived its SIGKILLed runner")
