"""Commands and files in a real container: output, exit codes, env, cwd, timeouts, tar transfers."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mimo_core.tools.bash import BashTool
from tests.tools import shell_checks


def test_exec_merges_output_keeps_exit_code_env_and_cwd(make_docker_env) -> None:
    env = make_docker_env(cwd="/testbed", env={"FOO": "bar"})
    res = env.execute("echo out $FOO; echo err >&2; pwd; exit 3")
    assert res.returncode == 3 and not res.timed_out
    assert res.output == "out bar\nerr\n/testbed\n"
    res = env.execute("mkdir -p sub && cd sub && pwd && echo $X", cwd="/tmp", env={"X": "y"})
    assert res.output == "/tmp/sub\ny\n"
    env.execute("mkdir -p rel")
    assert env.execute("pwd", cwd="rel").output == "/testbed/rel\n"


def test_background_job_does_not_hold_the_call(make_docker_env) -> None:
    env = make_docker_env()
    t = time.monotonic()
    res = env.execute("sleep 30 & echo started", timeout=20)
    assert res.output == "started\n" and res.returncode == 0
    assert time.monotonic() - t < 5


def test_timeout_kills_the_command_and_its_children_and_container_keeps_working(make_docker_env) -> None:
    env = make_docker_env()
    t = time.monotonic()
    res = env.execute("echo before; (sleep 300 &); setsid sleep 301 & sleep 302; echo after", timeout=1.5)
    assert res.timed_out and res.returncode != 0
    assert time.monotonic() - t < 8
    assert "before" in res.output and "after" not in res.output
    left = env.execute("ps -eo args | grep -c '^sleep 30[012]' || true").output.strip()
    assert left == "0", env.execute("ps -eo pid,pgid,args").output
    again = env.execute("echo alive")
    assert again.output == "alive\n" and again.returncode == 0


def test_files_go_in_and_out_as_tar(make_docker_env, tmp_path: Path) -> None:
    env = make_docker_env(cwd="/testbed")
    env.write_file("a/b.txt", b"hello\x00bytes")
    assert env.read_file("/testbed/a/b.txt") == b"hello\x00bytes"
    env.write_file("/opt/run.sh", b"#!/bin/sh\necho ran\n", mode=0o755)
    assert env.execute("/opt/run.sh").output == "ran\n"
    env.write_file("/opt/run.sh", b"#!/bin/sh\necho again\n")  # mode kept
    assert env.execute("/opt/run.sh").output == "again\n"
    with pytest.raises(FileNotFoundError):
        env.read_file("/nope/missing")

    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "m.py").write_text("x = 1\n")
    (src / "top.txt").write_text("top\n")
    env.copy_in(src, "/work/copied")
    assert env.execute("cd /work/copied && find . -type f | sort").output == "./pkg/m.py\n./top.txt\n"
    env.copy_in(src / "top.txt", "/work/copied/pkg")  # into an existing folder
    env.copy_in(src / "top.txt", "/work/renamed.txt")  # to a file path
    assert env.read_file("/work/copied/pkg/top.txt") == b"top\n"
    assert env.read_file("/work/renamed.txt") == b"top\n"

    out = tmp_path / "out"
    env.copy_out("/work/copied", out)
    assert (out / "pkg" / "m.py").read_text() == "x = 1\n" and (out / "top.txt").read_text() == "top\n"
    env.copy_out("/work/renamed.txt", tmp_path / "single.txt")
    assert (tmp_path / "single.txt").read_text() == "top\n"


@pytest.mark.parametrize("check", shell_checks.ALL, ids=lambda c: c.__name__)
def test_persistent_shell_in_a_container(make_docker_env, check) -> None:
    check(make_docker_env(cwd="/testbed"))


def test_the_shell_is_one_exec_kept_open(make_docker_env) -> None:
    """Calls reuse one shell process (its pid stays), and the stream survives a background job."""
    env = make_docker_env(cwd="/testbed")
    bash = BashTool(default_timeout=10)
    first = bash.run({"command": "echo $$; sleep 100 >/dev/null 2>&1 &"}, env).output.split()[0]
    assert bash.run({"command": "echo $$"}, env).output.split()[0] == first


def test_a_running_command_can_be_killed_from_another_thread(make_docker_env) -> None:
    """What a SIGTERM handler does (environments.live.interrupt_all): a command sleeping returns at once."""
    import threading

    from mimo_core.environments import live

    env = make_docker_env(cwd="/testbed")
    bash = BashTool(default_timeout=60)
    threading.Timer(1.0, live.interrupt_all).start()
    start = time.monotonic()
    res = bash.run({"command": "sleep 60"}, env)
    assert time.monotonic() - start < 10 and res.returncode != 0
    assert bash.run({"command": "echo back"}, env).output.startswith("back\n")  # a new shell serves the next call
