"""The base repository prepared once per task on the host and copied into each sandbox behaves like the
one git used to make inside the sandbox: same base commit, a clean tree, the agent's edits collected."""

from __future__ import annotations

import base64
import io
import json
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from mimo_core.datasets.base_repo import prepared_base
from mimo_core.datasets.git import BASE_REF
from mimo_core.datasets.loader import load_tasks
from mimo_core.datasets.registry import get_dataset_type
from mimo_core.datasets.repo_dataset import RepoTask
from mimo_core.environments.base import Environment, SandboxSpec
from tests.host_needs import in_ci

pytestmark = pytest.mark.skipif(shutil.which("git") is None and not in_ci(), reason="git is not installed on this host")
Factory = Callable[[SandboxSpec], Environment]


def _task(tmp_path: Path, **row: object) -> RepoTask:
    repo = tmp_path / "data" / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "greeting.txt").write_text("hello\n")
    (repo / "pkg" / "run.sh").write_text("echo run\n")
    (repo / "pkg" / "run.sh").chmod(0o755)
    base = {
        "instance_id": f"t-{len(row)}",
        "dataset_type": "generic",
        "repo_dir": "repo",
        "eval_script": "true",
        "problem_statement": "p",
        **row,
    }
    data = tmp_path / "data" / "tasks.jsonl"
    data.write_text(json.dumps(base) + "\n")
    [task] = load_tasks(str(data))
    assert isinstance(task, RepoTask)
    return task


def _git(env: Environment, args: str) -> str:
    res = env.execute(f"git -c safe.directory='*' {args}", cwd=env.spec.cwd)
    assert res.returncode == 0, res.output
    return res.output.strip()


def _start(task: RepoTask, new_env: Factory) -> Environment:
    dtype = get_dataset_type(task.dataset_type)
    env = new_env(dtype.sandbox_spec(task, None, 60, False))
    dtype.setup(env, task)
    return env


def test_prepared_base_matches_the_commit_git_makes_in_the_sandbox(tmp_path: Path, new_env: Factory) -> None:
    task = _task(tmp_path)
    dtype = get_dataset_type(task.dataset_type)
    copied = _start(task, new_env)
    in_sandbox = new_env(dtype.sandbox_spec(task, None, 60, False))
    in_sandbox.execute(f"mkdir -p {in_sandbox.spec.cwd}")
    dtype._seed(in_sandbox, task, in_sandbox.spec.cwd)
    dtype.ensure_git_base(in_sandbox, in_sandbox.spec.cwd)
    assert _git(copied, f"rev-parse {BASE_REF}") == _git(in_sandbox, f"rev-parse {BASE_REF}")
    assert _git(copied, "rev-parse HEAD") == _git(copied, f"rev-parse {BASE_REF}")
    assert _git(copied, "status --porcelain") == ""
    assert _git(copied, "ls-files -s pkg/run.sh").startswith("100755")


def test_each_rollout_gets_its_own_copy_and_its_edits_are_collected(tmp_path: Path, new_env: Factory) -> None:
    task = _task(tmp_path)
    dtype = get_dataset_type(task.dataset_type)
    first, second = _start(task, new_env), _start(task, new_env)
    first.write_file(f"{first.spec.cwd}/greeting.txt", b"goodbye\n")
    first.write_file(f"{first.spec.cwd}/new.txt", b"new\n")
    _git(first, "-c user.name=a -c user.email=b commit -qam 'agent commits too'")
    diff = dtype.collect_submission(first, task)
    assert "-hello" in diff and "+goodbye" in diff and "+new" in diff
    assert dtype.collect_submission(second, task) == ""
    assert second.read_file(f"{second.spec.cwd}/greeting.txt") == b"hello\n"
    assert prepared_base(task) is not None and (prepared_base(task) / "greeting.txt").read_text() == "hello\n"


def test_archive_rows_use_a_prepared_base_too(tmp_path: Path, new_env: Factory) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("a\n")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(src, arcname=".")
    task = _task(tmp_path, repo_dir=None, repo_archive=base64.b64encode(buf.getvalue()).decode())
    assert prepared_base(task) is not None
    env = _start(task, new_env)
    assert env.read_file(f"{env.spec.cwd}/a.txt") == b"a\n"
    assert _git(env, "status --porcelain") == "" and _git(env, f"rev-parse {BASE_REF}")


def test_a_setup_script_makes_the_base_in_the_sandbox_after_it_ran(tmp_path: Path, new_env: Factory) -> None:
    task = _task(tmp_path, setup_script="echo built > built.txt")
    assert prepared_base(task) is None
    env = _start(task, new_env)
    assert _git(env, f"ls-tree --name-only {BASE_REF}").split() == ["built.txt", "greeting.txt", "pkg"]
    assert _git(env, "status --porcelain") == ""
