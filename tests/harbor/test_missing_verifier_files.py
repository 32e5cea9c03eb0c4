"""A task whose verifier files are missing (two public DeepSWE tasks lack tests/config.json) is reported by
the converter, marked in its row, and graded as a grading_error naming the file, from the first second."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from mimo_core.records.results import ResultsStore
from tests.core.conftest import REPO, run_cli
from tests.harbor.conftest import write_harbor_config


def _broken_copy(tmp_path: Path) -> Path:
    src = tmp_path / "tasks"
    shutil.copytree(REPO / "examples" / "demo" / "py-ini-comments", src / "py-ini-comments")
    shutil.copytree(REPO / "examples" / "demo" / "py-median-even", src / "py-median-even")
    (src / "py-ini-comments" / "tests" / "config.json").unlink()  # its grade.py reads /tests/config.json
    return src


def _convert(src: Path, out: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "scripts/convert_deepswe.py", "--src", str(src), "--out", str(out), *flags],
        cwd=REPO,
        capture_output=True,
        text=True,
    )


def test_converter_reports_the_missing_file_and_marks_the_row(tmp_path: Path) -> None:
    proc = _convert(_broken_copy(tmp_path), tmp_path / "rows.jsonl")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        "warning: task py-ini-comments: verifier file(s) missing: tests/config.json "
        "(row marked: grading it is a grading_error)"
    ]
    rows = {r["instance_id"]: r for r in map(json.loads, (tmp_path / "rows.jsonl").read_text().splitlines())}
    assert rows["py-ini-comments"]["verifier_files_missing"] == ["tests/config.json"]
    assert rows["py-median-even"]["verifier_files_missing"] == []


def test_strict_converter_exits_non_zero_and_writes_nothing(tmp_path: Path) -> None:
    proc = _convert(_broken_copy(tmp_path), tmp_path / "rows.jsonl", "--strict")
    assert proc.returncode == 1
    assert "error: task py-ini-comments: verifier file(s) missing: tests/config.json" in proc.stderr
    assert not (tmp_path / "rows.jsonl").exists()


def test_a_marked_row_is_a_grading_error_with_the_reason_and_runs_nothing(tmp_path: Path, scripted_llm) -> None:
    assert _convert(_broken_copy(tmp_path), tmp_path / "rows.jsonl").returncode == 0
    out = tmp_path / "out"
    for args in ([], ["--recalc-input", "gt"]):
        proc = run_cli(
            [
                "-c",
                str(write_harbor_config(tmp_path)),
                "--dataset",
                str(tmp_path / "rows.jsonl"),
                "-o",
                str(out),
                "--redo-existing",
                *args,
            ],
            scripted_llm,
        )
        assert proc.returncode == 0, proc.stderr
        assert "row py-ini-comments: the task's verifier files are missing (tests/config.json)" in proc.stderr
        records = {r.instance_id: r for r in ResultsStore(out).load().values()}
        broken = records["py-ini-comments"]
        assert (broken.exit_status, broken.reward, broken.infra_error) == ("grading_error", None, True)
        assert broken.error == ("the task's verifier files are missing (tests/config.json): it cannot be graded")
        assert broken.duration_s < 5 and broken.steps == 0
        assert records["py-median-even"].exit_status != "grading_error"


def test_which_verifier_files_count_as_needed() -> None:
    from mimo_core.datasets.harbor import missing_verifier_files

    script = "python3 /tests/grader.py --out $TESTS_DIR/out.txt; cd /app && pytest tests/test_x.py /app/tests/y.py"
    assert missing_verifier_files({"test.sh": script, "grader.py": "..."}) == [
        "tests/config.json",
        "tests/out.txt",
    ]  # DeepSWE's grader reads config.json beside it
    assert missing_verifier_files({"test.sh": script, "grader.py": "...", "config.json": "{}", "out.txt": ""}) == []
    assert missing_verifier_files({"grader.py": "..."}) == ["tests/config.json", "tests/test.sh"]


# The shape of DeepSWE's claude-code-by-agents-recursive-delegation verifier (written here, not copied):
# vitest runs that exclude test folders by glob, beside real references to the task's /tests files.
VITEST_TEST_SH = """#!/bin/bash
cd /app || exit 6
python3 /tests/grader.py prepare || exit $?
( cd /app/backend && bunx vitest run --reporter=junit --outputFile=/logs/verifier/base.xml \\
    --exclude="**/tests/new/**" \\
    --exclude="**/tests/providers/openai.test.ts" --exclude='**/tests/handlers/*.test.ts' )
( cd /app/frontend && bunx vitest run --exclude "**/tests/new/**" --exclude=**/src/App.test.tsx )
( cd /app/backend && bunx vitest run tests/handlers/recursiveDelegation.test.ts )
cat "${TESTS_DIR}/config.json" > /dev/null
python3 /tests/grader.py grade
"""


def _vitest_task(root: Path, with_config: bool) -> Path:
    task = root / "tasks" / "recursive-delegation"
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text('schema_version = "1.3"\n[metadata]\ntask_id = "recursive-delegation"\n')
    (task / "instruction.md").write_text("Delegate recursively.\n")
    (task / "tests" / "test.sh").write_text(VITEST_TEST_SH)
    (task / "tests" / "grader.py").write_text("import json, os\nCONFIG = os.environ.get('TESTS_DIR', '/tests')\n")
    if with_config:
        (task / "tests" / "config.json").write_text('{"f2p_node_ids": [], "p2p_node_ids": []}\n')
    return task.parent


def test_a_glob_that_contains_tests_is_not_a_missing_verifier_file(tmp_path: Path) -> None:
    proc = _convert(_vitest_task(tmp_path, with_config=True), tmp_path / "rows.jsonl")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    [row] = map(json.loads, (tmp_path / "rows.jsonl").read_text().splitlines())
    assert row["verifier_files_missing"] == []


def test_a_real_reference_beside_the_globs_is_still_checked(tmp_path: Path) -> None:
    proc = _convert(_vitest_task(tmp_path, with_config=False), tmp_path / "rows.jsonl")
    assert proc.returncode == 0
    assert proc.stderr.splitlines() == [
        "warning: task recursive-delegation: verifier file(s) missing: tests/config.json "
        "(row marked: grading it is a grading_error)"
    ]
