"""A test DeepSWE's grader reports as absent ("missing from report", written as status failed) counts as
missing, not failed (issue 33): through a real local sandbox's grading and evidence, and on the report."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from mimo_core.datasets.loader import load_tasks
from mimo_core.datasets.registry import get_dataset_type
from mimo_core.environments.base import Environment, SandboxSpec
from mimo_core.grading.verifier_reports import ctrf_outcomes

Factory = Callable[[SandboxSpec], Environment]
# DeepSWE's grader.py (datacurve-ai/deep-swe, tests/grader.py `bucket`) for an id no report has
MISSING_MESSAGE = "missing from report (test did not run or produced no result — see raw output)"
CONFIG = {
    "f2p_node_ids": ["tests/test_a.py::test_new", "tests/test_a.py::test_gone"],
    "p2p_node_ids": ["tests/test_a.py::test_old"],
}
CTRF = {
    "reportFormat": "CTRF",
    "results": {
        "tool": {"name": "pytest"},
        "tests": [
            {"name": "[p2p] tests/test_a.py::test_old", "status": "passed"},
            {"name": "[f2p] tests/test_a.py::test_new", "status": "failed", "message": "AssertionError: key 'missing'"},
            {"name": "[f2p] tests/test_a.py::test_gone", "status": "failed", "message": MISSING_MESSAGE},
        ],
    },
}


def test_missing_from_report_is_counted_missing_in_the_grade(tmp_path: Path, new_env: Factory) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.txt").write_text("a\n")
    eval_script = (
        "mkdir -p /logs/verifier\ncp /tests/ctrf.json /logs/verifier/ctrf.json\n"
        "echo '{\"reward\": 0}' > /logs/verifier/reward.json\n"
    )
    row = {
        "instance_id": "ctrf",
        "dataset_type": "generic",
        "repo_dir": "repo",
        "problem_statement": "x",
        "eval_script": eval_script,
        "test_files": {"config.json": json.dumps(CONFIG), "ctrf.json": json.dumps(CTRF, ensure_ascii=False)},
    }
    (tmp_path / "tasks.jsonl").write_text(json.dumps(row) + "\n")
    task = load_tasks(str(tmp_path / "tasks.jsonl"))[0]
    dtype = get_dataset_type("generic")
    env = new_env(dtype.sandbox_spec(task, None, 60, True))
    dtype.setup(env, task)
    grade = dtype.grade(env, task, "", new_env)
    assert (grade.reward, grade.infra_error, grade.findings) == (0.0, None, [])
    tests = grade.details["tests"]
    assert tests["f2p"] == {
        "passed": [],
        "failed": ["tests/test_a.py::test_new"],
        "errored": [],
        "missing": ["tests/test_a.py::test_gone"],
    }
    assert tests["p2p"]["passed"] == ["tests/test_a.py::test_old"]


def test_other_wordings_of_absent_and_a_failure_that_mentions_missing() -> None:
    report = {
        "results": {
            "tests": [
                {"name": "a", "status": "failed", "message": "test not found in report"},
                {"name": "b", "status": "failed", "message": "Missing from the report"},
                {"name": "c", "status": "failed", "message": "KeyError: 'missing' from report_data"},
                {"name": "d", "status": "passed", "message": "missing from report"},
            ]
        }
    }
    assert ctrf_outcomes(report) == {"a": "missing", "b": "missing", "c": "failed", "d": "passed"}
