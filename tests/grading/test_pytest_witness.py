"""The pytest witness: a verifier that scores by pytest's exit status cannot be fooled by code under test
that forces it (`atexit` + `os._exit(0)`, `os._exit(0)` inside a test). Real pytest in a local sandbox, on a
generic row (reward from the exit status) and an opensource-code row run once per test (`{test}`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mimo_core.datasets.base import Task
from mimo_core.datasets.loader import load_tasks
from mimo_core.datasets.registry import get_dataset_type
from mimo_core.environments.base import Environment, SandboxSpec
from mimo_core.grading.grade import Grade

Factory = Callable[[SandboxSpec], Environment]
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
WRONG = "def add(a, b):\n    return a - b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
EVAL = (
    f"mkdir -p /logs/verifier; {PYTEST} tests/test_calc.py; "
    "if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi"
)
ATEXIT = WRONG + "import atexit, os\natexit.register(lambda: os._exit(0))\n"
IN_CALL = "import os\n\n\ndef add(a, b):\n    os._exit(0)\n"


def _task(tmp_path: Path, **row: object) -> Task:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(WRONG)
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    base = {
        "instance_id": "calc",
        "dataset_type": "generic",
        "repo_dir": "repo",
        "problem_statement": "add",
        "eval_script": EVAL,
        **row,
    }
    (tmp_path / "tasks.jsonl").write_text(json.dumps(base) + "\n")
    return load_tasks(str(tmp_path / "tasks.jsonl"))[0]


def graded(task: Task, factory: Factory, calc: str) -> Grade:
    dtype = get_dataset_type(task.dataset_type)
    env = factory(dtype.sandbox_spec(task, None, 120, True))
    dtype.setup(env, task)
    env.write_file(f"{env.spec.cwd}/calc.py", calc.encode())
    env.begin_grading()
    dtype.prepare_grading(env, task)
    return dtype.grade(env, task, dtype.collect_submission(env, task), factory)


def forged(grade: Grade) -> list[str]:
    return [f.detail for f in grade.findings if f.kind == "forged_verdict" and f.zeroes]


@pytest.mark.parametrize("calc", [ATEXIT, IN_CALL], ids=["atexit-os-exit-0", "os-exit-0-in-the-call"])
def test_a_forced_exit_status_is_a_forged_verdict(calc: str, tmp_path: Path, new_env: Factory) -> None:
    grade = graded(_task(tmp_path), new_env, calc)
    assert (grade.reward, grade.passed, grade.infra_error) == (0.0, False, None), grade.details
    assert any("normal exit" in d for d in forged(grade)), grade.findings


def test_honest_fix_and_honest_failure_have_no_finding(tmp_path: Path, new_env: Factory) -> None:
    task = _task(tmp_path)
    right = graded(task, new_env, RIGHT)
    assert (right.reward, right.passed, forged(right)) == (1.0, True, [])
    wrong = graded(task, new_env, WRONG)
    assert (wrong.reward, forged(wrong)) == (0.0, [])


def test_a_verifier_with_its_own_pythonpath_still_grades(tmp_path: Path, new_env: Factory) -> None:
    task = _task(tmp_path, eval_script="export PYTHONPATH=$PWD; " + EVAL)
    assert graded(task, new_env, RIGHT).reward == 1.0


def test_an_exit_status_per_test_is_witnessed_too(tmp_path: Path, new_env: Factory) -> None:
    tests_patch = (
        "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n"
        "+++ b/tests/test_calc.py\n@@ -1 +1 @@\n-from calc import add\n+from calc import add  # v2\n"
    )
    task = _task(
        tmp_path,
        dataset_type="opensource-code",
        eval_script=None,
        test_patch=tests_patch,
        FAIL_TO_PASS=["tests/test_calc.py::test_add"],
        test_cmd=PYTEST + " {test}",
    )
    assert graded(task, new_env, RIGHT).reward == 1.0
    grade = graded(task, new_env, ATEXIT)
    assert grade.reward == 0.0 and forged(grade), (grade.details, grade.findings)
