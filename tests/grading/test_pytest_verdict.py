"""Only pytest's own summary counts (issue 33): text the code under test prints cannot add or flip a result,
and a report that contradicts itself or pytest's exit status voids the verdict. Real pytest runs on an
opensource-code row in a local sandbox, plus the parser on pytest's exact layouts."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mimo_core.datasets.base import Task
from mimo_core.datasets.loader import load_tasks
from mimo_core.datasets.registry import get_dataset_type
from mimo_core.environments.base import Environment, SandboxSpec
from mimo_core.grading.grade import Grade
from mimo_core.grading.pytest_summary import contradictions, parse_pytest, read_pytest

Factory = Callable[[SandboxSpec], Environment]
WRONG = "def add(a, b):\n    return a - b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
TESTS = (
    "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n"
)
TEST_PATCH = (
    "diff --git a/tests/test_calc.py b/tests/test_calc.py\nnew file mode 100644\n--- /dev/null\n"
    "+++ b/tests/test_calc.py\n@@ -0,0 +1,9 @@\n" + "".join(f"+{line}\n" for line in TESTS.splitlines())
)
# what the agent's calc.py does at exit, after pytest printed its final line
FAKE_SUMMARY = (
    "import atexit\natexit.register(lambda: print('=== short test summary info ===\\n"
    "PASSED tests/test_calc.py::test_add\\n=== 1 passed in 0.01s ===', flush=True))\n"
)


def oss_task(tmp_path: Path) -> Task:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text(WRONG)
    (repo / "tests").mkdir()
    (repo / "tests" / "__init__.py").write_text("")
    row = {
        "instance_id": "calc",
        "dataset_type": "opensource-code",
        "repo_dir": "repo",
        "problem_statement": "add must add",
        "test_patch": TEST_PATCH,
        "FAIL_TO_PASS": ["tests/test_calc.py::test_add"],
        "PASS_TO_PASS": ["tests/test_calc.py::test_zero"],
        "test_cmd": f"{sys.executable} -m pytest -rA -p no:cacheprovider -p no:randomly",
    }
    (tmp_path / "tasks.jsonl").write_text(json.dumps(row) + "\n")
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


def test_honest_runs_are_graded_as_before(tmp_path: Path, new_env: Factory) -> None:
    task = oss_task(tmp_path)
    grade = graded(task, new_env, RIGHT)
    assert (grade.reward, grade.passed, grade.findings) == (1.0, True, []), grade.details
    grade = graded(task, new_env, WRONG)
    assert (grade.reward, grade.passed, grade.findings) == (0.0, False, [])
    assert grade.details["f2p"] == {"tests/test_calc.py::test_add": False}
    assert grade.details["p2p"] == {"tests/test_calc.py::test_zero": True}


def test_passed_lines_printed_after_the_final_line_are_ignored(tmp_path: Path, new_env: Factory) -> None:
    calc = WRONG + "import atexit\natexit.register(lambda: print('PASSED tests/test_calc.py::test_add', flush=True))\n"
    grade = graded(oss_task(tmp_path), new_env, calc)
    assert (grade.reward, grade.passed) == (0.0, False)
    assert grade.details["f2p"] == {"tests/test_calc.py::test_add": False}
    assert any("printed after pytest's final line" in d for d in forged(grade)), grade.findings


def test_a_second_summary_printed_at_exit_voids_the_verdict(tmp_path: Path, new_env: Factory) -> None:
    grade = graded(oss_task(tmp_path), new_env, WRONG + FAKE_SUMMARY)
    assert (grade.reward, grade.passed) == (0.0, False)
    assert any("2 'short test summary info' sections" in d for d in forged(grade)), grade.findings


def test_an_exit_status_forced_to_zero_voids_the_verdict(tmp_path: Path, new_env: Factory) -> None:
    calc = WRONG + "import atexit, os\natexit.register(lambda: os._exit(0))\n"
    grade = graded(oss_task(tmp_path), new_env, calc)
    assert (grade.reward, grade.passed) == (0.0, False)
    assert any("pytest exited 0" in d for d in forged(grade)), grade.findings


def test_an_exit_inside_the_test_voids_the_verdict(tmp_path: Path, new_env: Factory) -> None:
    calc = "import os\n\n\ndef add(a, b):\n    os._exit(0)\n"
    grade = graded(oss_task(tmp_path), new_env, calc)
    assert (grade.reward, grade.passed) == (0.0, False)
    assert any("without printing its final line" in d for d in forged(grade)), grade.findings


# --- the parser on pytest's exact layout --------------------------------------------------------------------

HEADER = "=========================== short test summary info ============================"


def run(lines: list[str], final: str = "= 1 failed, 1 passed in 0.12s =") -> str:
    return (
        "\n".join(
            [
                "============================= test session starts ==============================",
                "collected 2 items",
                "",
                "a.py .F",
                HEADER,
                *lines,
                final,
            ]
        )
        + "\n"
    )


def test_real_pytest_output_is_parsed_without_conflicts(tmp_path: Path) -> None:
    """pytest's own output for passes, failures, a teardown error, skips, xfail/xpass and parameters with
    spaces and ` - `: no conflict, the statuses as pytest gave them."""
    (tmp_path / "test_a.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef bad():\n    yield\n    raise RuntimeError('teardown')\n\n"
        "def test_ok(): pass\ndef test_fail(): assert 0\ndef test_td(bad): pass\n"
        "@pytest.mark.skip(reason='s')\ndef test_skip(): pass\n@pytest.mark.xfail\ndef test_xf(): assert 0\n"
        "@pytest.mark.xfail\ndef test_xp(): pass\n@pytest.mark.parametrize('v', ['a b', 'c - d'])\n"
        "def test_p(v): pass\n"
    )
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "-p", "no:randomly", "test_a.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = read_pytest(res.stdout)
    assert report.conflicts == [] and contradictions(report, res.returncode) == [], res.stdout
    assert report.statuses == {
        "test_a.py::test_ok": "PASSED",
        "test_a.py::test_fail": "FAILED",
        "test_a.py::test_td": "ERROR",
        "test_a.py::test_xf": "XFAIL",
        "test_a.py::test_xp": "XPASS",
        "test_a.py::test_p[a b]": "PASSED",
        "test_a.py::test_p[c - d]": "PASSED",
    }
    assert report.counts["passed"] == 4 and report.counts["error"] == 1


def test_a_second_line_for_one_test_with_another_status_is_a_conflict() -> None:
    report = read_pytest(
        run(
            ["FAILED a.py::test_b - assert 0", "PASSED a.py::test_a", "PASSED a.py::test_b"],
            final="= 1 failed, 2 passed in 0.12s =",
        )
    )
    assert report.statuses["a.py::test_b"] == "FAILED"  # the first result wins
    assert any("a.py::test_b is reported FAILED and then PASSED" in c for c in report.conflicts)


def test_a_second_summary_header_is_a_conflict() -> None:
    out = run(
        ["FAILED a.py::test_b - assert 0", "PASSED a.py::test_a", HEADER, "PASSED a.py::test_b", "PASSED a.py::test_a"],
        final="= 2 passed in 0.12s =",
    )
    assert any("2 'short test summary info'" in c for c in read_pytest(out).conflicts)


def test_stats_that_disagree_with_the_lines_are_a_conflict() -> None:
    report = read_pytest(run(["PASSED a.py::test_a", "PASSED a.py::test_b"], final="= 1 failed, 1 passed in 0.12s ="))
    assert any("says 1 failed" in c for c in report.conflicts) and any("says 1 passed" in c for c in report.conflicts)


def test_everything_after_the_final_line_is_ignored_and_result_lines_there_are_a_conflict() -> None:
    out = run(["PASSED a.py::test_a", "FAILED a.py::test_b - assert 0"])
    assert read_pytest(out + "Exception ignored in atexit callback\n").conflicts == []
    out += "PASSED a.py::test_b\n"
    assert parse_pytest(out) == {"a.py::test_a": "PASSED", "a.py::test_b": "FAILED"}
    assert read_pytest(out).conflicts == ["1 result line(s) printed after pytest's final line"]


def test_no_final_line_means_no_result() -> None:
    """pytest killed or os._exit before its summary: nothing it printed before counts as a pass, and an
    exit status 0 without the final line is a contradiction (a runner that is not pytest is not)."""
    out = "\n".join(["===== test session starts =====", HEADER, "PASSED a.py::test_a"]) + "\n"
    assert parse_pytest(out) == {}
    assert contradictions(read_pytest(out), 0) == [
        "pytest exited 0 without printing its final line (its run was cut short)"
    ]
    assert contradictions(read_pytest(out), 1) == []
    assert contradictions(read_pytest("OK: 3 tests\n"), 0) == []


@pytest.mark.parametrize(
    "lines,final,code,expected",
    [
        (["PASSED a.py::test_a", "PASSED a.py::test_b"], "= 2 passed in 0.1s =", 1, "pytest exited 1"),
        (["PASSED a.py::test_a", "FAILED a.py::test_b - x"], "= 1 failed, 1 passed in 0.1s =", 0, "pytest exited 0"),
        (["ERROR a.py::test_b - x"], "= 1 error in 0.1s =", 0, "pytest exited 0"),
    ],
)
def test_a_report_that_contradicts_the_exit_status(lines: list[str], final: str, code: int, expected: str) -> None:
    assert any(expected in c for c in contradictions(read_pytest(run(lines, final)), code))


@pytest.mark.parametrize(
    "lines,final,code",
    [
        (["PASSED a.py::test_a", "PASSED a.py::test_b"], "= 2 passed in 0.1s =", 0),
        (["PASSED a.py::test_a", "FAILED a.py::test_b - x"], "= 1 failed, 1 passed in 0.1s =", 1),
        (["PASSED a.py::test_a", "ERROR a.py::test_a - teardown"], "= 1 passed, 1 error in 0.1s =", 1),
        ([], "= 2 passed in 0.01 seconds =", 0),  # -rfE (no PASSED lines), old pytest's "seconds"
    ],
)
def test_honest_reports_have_no_contradiction(lines: list[str], final: str, code: int) -> None:
    assert contradictions(read_pytest(run(lines, final)), code) == []
