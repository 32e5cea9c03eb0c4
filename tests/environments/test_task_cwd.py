"""The task's absolute cwd on the local backend: bound by bwrap, explained without a sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from mimo_core.environments.local.task_cwd import bwrap_task_cwd_args
from mimo_core.errors import SandboxError
from tests.environments.conftest import MakeEnv
from tests.host_needs import needs_bwrap


@needs_bwrap
def test_bwrap_binds_the_work_dir_at_the_task_cwd(make_env: MakeEnv) -> None:
    env = make_env(sandbox="bwrap", cwd="/app")
    Path(env.spec.cwd, "main.py").write_text("print(1)\n")
    out = env.execute("cd /app && pwd && ls && echo new > /app/made.txt", cwd="/tmp")
    assert out.returncode == 0, out.output
    assert out.output.split() == ["/app", "main.py"]
    assert Path(env.spec.cwd, "made.txt").read_text() == "new\n"
    assert not Path("/app/made.txt").exists()


@needs_bwrap
def test_bwrap_commands_start_in_the_task_cwd_and_the_root_stays_read_only(make_env: MakeEnv) -> None:
    env = make_env(sandbox="bwrap", cwd="/testbed/pkg")
    Path(env.spec.cwd, "sub").mkdir()
    assert env.execute("pwd").output.strip() == "/testbed/pkg"
    assert env.execute("pwd", cwd=str(Path(env.spec.cwd, "sub"))).output.strip() == "/testbed/pkg/sub"
    assert env.execute("pwd", cwd="/testbed/pkg/sub").output.strip() == "/testbed/pkg/sub"
    made = env.execute("mkdir /new_top_dir")
    assert made.returncode != 0 and "Read-only file system" in made.output


def test_a_task_cwd_on_a_system_folder_or_inside_a_read_only_host_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="/usr is a system folder"):
        bwrap_task_cwd_args("/usr", str(tmp_path))
    with pytest.raises(SandboxError, match="read-only /etc"):
        bwrap_task_cwd_args("/etc/no-such-dir/app", str(tmp_path))
    assert bwrap_task_cwd_args("/tmp/a/b", str(tmp_path))[:3] == ["--bind", str(tmp_path), "/tmp/a/b"]


def test_without_a_sandbox_a_command_naming_the_task_cwd_explains_where_it_is(make_env: MakeEnv) -> None:
    env = make_env(cwd="/app")
    failed = env.execute("cd /app && ls")
    assert failed.returncode != 0
    assert (
        f"/app is the task's working directory inside a container; on the local backend without a "
        f"sandbox it is {env.spec.cwd}" in failed.output
    )
    assert "environment.sandbox: bwrap" in failed.output
    other = env.execute("cat /nonexistent/file")
    assert other.returncode != 0 and "[mimoagent]" not in other.output
    assert "[mimoagent]" not in env.execute("ls /apple 2>/dev/null; false").output
