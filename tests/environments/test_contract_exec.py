"""The Environment contract, commands: output, exit codes, env and cwd, timeouts that kill the whole
tree, background jobs, threads. Run against every backend (the `backend` fixture in conftest.py)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.environments.conftest import Backend
from tests.environments.contract import gone, running, tag


def _seen_cwd(backend: Backend, env) -> str:
    """The working folder as commands see it: the task's own path where the sandbox shows it there."""
    return "/testbed" if backend.caps.confined else env.spec.cwd


def test_execute_merges_output_keeps_exit_code_env_and_cwd(backend: Backend) -> None:
    env = backend.make(env={"FOO": "bar"})
    cwd = _seen_cwd(backend, env)
    res = env.execute("echo out $FOO; echo err >&2; pwd; exit 3")
    assert res.returncode == 3 and not res.timed_out
    assert res.output == f"out bar\nerr\n{cwd}\n"
    env.execute("mkdir -p rel/sub")
    assert env.execute("cd sub && pwd && echo $X", cwd="rel", env={"X": "y"}).output == f"{cwd}/rel/sub\ny\n"
    assert env.execute("pwd", cwd="/testbed/rel").output == f"{cwd}/rel\n"  # the task's declared cwd
    assert env.execute("pwd; echo $X", cwd=env.scratch_dir).output == f"{env.scratch_dir}\n\n"  # env is per call
    missing = env.execute("pwd", cwd="nope")
    assert missing.returncode != 0 and "nope" in missing.output


def test_not_a_login_shell_and_the_runners_secrets_stay_out(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    from mimo_core.tools.bash import BashTool

    monkeypatch.setenv("MIMO_TEST_API_KEY", "sk-secret")
    env = backend.make()
    env.execute('for f in .bash_profile .profile .bashrc; do echo "echo PROFILE_WAS_READ" > "$HOME/$f"; done')
    for out in (env.execute("env").output, BashTool(default_timeout=10).run({"command": "env"}, env).output):
        assert "HOME=" in out and "PROFILE_WAS_READ" not in out and "sk-secret" not in out


def test_a_timeout_kills_the_command_and_all_it_started_and_the_sandbox_keeps_working(backend: Backend) -> None:
    env = backend.make()
    t = tag()
    start = time.monotonic()
    res = env.execute(
        f"echo before; (sleep {t}0 &); setsid sleep {t}1 & sleep {t}2 & sleep {t}3; echo after", timeout=1.5
    )
    assert time.monotonic() - start < 1.5 + backend.late
    assert res.timed_out and res.returncode != 0
    assert "before" in res.output and "after" not in res.output
    assert gone(t) == []
    again = env.execute("echo alive")
    assert again.output == "alive\n" and again.returncode == 0


def test_the_specs_timeout_is_the_default(backend: Backend) -> None:
    env = backend.make(timeout=1.0)
    t = tag()
    start = time.monotonic()
    res = env.execute(f"sleep {t}")
    assert res.timed_out and time.monotonic() - start < 1.0 + backend.late
    assert gone(t) == []
    assert not env.execute("sleep 0.1", timeout=10).timed_out  # a call's own timeout wins


def test_a_background_job_does_not_hold_the_call_and_stop_ends_it(backend: Backend) -> None:
    """Even one that left the session (`setsid`) or ignores hang-ups (`nohup`)."""
    env = backend.make()
    t = tag()
    start = time.monotonic()
    res = env.execute(f"sleep {t}0 & setsid sleep {t}1 & nohup sleep {t}2 >/dev/null 2>&1 & echo started", timeout=20)
    assert res.output == "started\n" and res.returncode == 0
    assert time.monotonic() - start < 5
    assert len(running(t, 3)) == 3  # still running after the call returned
    env.stop()
    assert gone(t) == []


def test_commands_from_two_threads_run_side_by_side(backend: Backend) -> None:
    """A long command in one thread does not hold up another thread's command."""
    env = backend.make()
    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(env.execute, "sleep 4; echo slow", 20)
        time.sleep(0.3)
        start = time.monotonic()
        assert env.execute("echo quick").output == "quick\n"
        assert time.monotonic() - start < 3.0  # not the slow command's 4 s
        assert slow.result().output == "slow\n"
