"""Patch application (git apply, then patch -p1), reward files, test logs and the path map."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mimo_core.config import EnvironmentConfig
from mimo_core.datasets.paths import PathMap
from mimo_core.environments.base import Environment, SandboxSpec
from mimo_core.environments.registry import make_environment
from mimo_core.grading.patch import apply_patch
from mimo_core.grading.pytest_summary import parse_pytest
from mimo_core.grading.reward import read_reward


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Environment]:
    e = make_environment(EnvironmentConfig(backend_kwargs={"root": str(tmp_path)}), SandboxSpec(cwd="/testbed"))
    e.start()
    yield e
    e.stop()


LINES = "".join(f"line {i}\n" for i in range(1, 11))


def test_git_apply_applies_a_clean_patch(env: Environment) -> None:
    env.write_file(f"{env.spec.cwd}/f.txt", LINES.encode())
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -4,3 +4,3 @@\n line 4\n-line 5\n+LINE 5\n line 6\n"
    ok, log = apply_patch(env, patch, env.spec.cwd)
    assert ok and "git apply" in log and "LINE 5" in env.read_file(f"{env.spec.cwd}/f.txt").decode()


def test_patch_git_refuses_is_applied_with_fuzz(env: Environment) -> None:
    env.write_file(f"{env.spec.cwd}/f.txt", LINES.encode())
    # the first context line is stale: git apply refuses, GNU patch applies with fuzz
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -4,3 +4,3 @@\n line four\n-line 5\n+LINE 5\n line 6\n"
    ok, log = apply_patch(env, patch, env.spec.cwd)
    assert ok and "patch --batch" in log
    assert "LINE 5" in env.read_file(f"{env.spec.cwd}/f.txt").decode()


def test_patch_that_does_not_apply_leaves_the_tree_untouched(env: Environment) -> None:
    env.write_file(f"{env.spec.cwd}/f.txt", LINES.encode())
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -4,3 +4,3 @@\n nothing\n-like\n+this\n here\n"
    ok, log = apply_patch(env, patch, env.spec.cwd)
    assert not ok and "git apply" in log
    assert env.read_file(f"{env.spec.cwd}/f.txt").decode() == LINES
    assert env.execute("ls", cwd=env.spec.cwd).output.split() == ["f.txt"]


def test_empty_patch_applies_as_nothing(env: Environment) -> None:
    assert apply_patch(env, "  \n", env.spec.cwd)[0]


def write(env: Environment, name: str, text: str) -> str:
    folder = f"{env.scratch_dir}/verifier"
    env.execute(f"mkdir -p {folder}")
    env.write_file(f"{folder}/{name}", text.encode())
    return folder


def test_reward_json_keeps_extra_fields(env: Environment) -> None:
    folder = write(env, "reward.json", '{"reward": 1, "f2p_total": 2, "apply_failed": false}')
    grade = read_reward(env, folder, "out")
    assert grade.passed and grade.reward == 1.0 and grade.details["f2p_total"] == 2
    assert grade.details["verifier_output_tail"] == "out"


def test_reward_txt_partial_is_not_passed(env: Environment) -> None:
    grade = read_reward(env, write(env, "reward.txt", "0.5\n"))
    assert grade.reward == 0.5 and not grade.passed and grade.infra_error is None


@pytest.mark.parametrize(
    "name,text,expected",
    [
        ("reward.txt", "-1\n", "crashed"),
        ("reward.json", '{"reward": -1}', "crashed"),
        ("reward.txt", "oops", "not a number"),
        ("reward.json", "[1,", "not valid"),
    ],
)
def test_bad_or_crash_reward_is_infra_error(env: Environment, name: str, text: str, expected: str) -> None:
    grade = read_reward(env, write(env, name, text))
    assert grade.infra_error and expected in grade.infra_error and grade.reward is None


def test_missing_reward_is_infra_error(env: Environment) -> None:
    assert "no reward file" in (read_reward(env, f"{env.scratch_dir}/nothing").infra_error or "")


def test_pytest_summary_is_parsed() -> None:
    out = (
        "===== short test summary info =====\n"
        "PASSED tests/a.py::test_x\nFAILED tests/a.py::test_y - AssertionError: no\n"
        "ERROR tests/b.py::test_z[a b]\nsomething else\n"
        "===== 1 failed, 1 passed, 1 error in 0.12s =====\n"
    )
    assert parse_pytest(out) == {
        "tests/a.py::test_x": "PASSED",
        "tests/a.py::test_y": "FAILED",
        "tests/b.py::test_z[a b]": "ERROR",
    }


def test_path_map_rewrites_task_paths_only_when_the_backend_moved_them() -> None:
    pm = PathMap("/app", "/tmp/x/work", "/tmp/x/scratch")
    text = "cd /app && cat /app/a /logs/v/r.json /tests/t.sh > /application /srv/app /apps"
    assert pm.text(text) == (
        "cd /tmp/x/work && cat /tmp/x/work/a /tmp/x/scratch/logs/v/r.json "
        "/tmp/x/scratch/tests/t.sh > /application /srv/app /apps"
    )
    assert pm.path("/logs/verifier") == "/tmp/x/scratch/logs/verifier"
    same = PathMap("/app", "/app", "/tmp/s")
    assert same.identity and same.text(text) == text and same.path("/logs") == "/logs"
