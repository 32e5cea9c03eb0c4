"""Everything the verifier writes under its logs folder, and its whole output, is kept in the rollout's
`verifier/` folder; per-test outcomes (f2p and p2p separately) are summarised in reward_extra_info.json."""

from __future__ import annotations

import json
from pathlib import Path

from testkit.scripted_llm import call, turns
from tests.core.conftest import REPO, run_cli
from tests.harbor.conftest import write_harbor_config, write_harbor_task, write_rows


def test_demo_verifier_ctrf_report_and_per_test_summary_are_in_the_rollout_folder(tmp_path: Path, scripted_llm) -> None:
    out = tmp_path / "out"
    proc = run_cli(
        [
            "-c",
            "configs/demo.yaml",
            "--dataset",
            "examples/demo.jsonl",
            "--filter",
            "^py-ini-comments$",
            "--recalc-input",
            "gt",
            "-o",
            str(out),
        ],
        scripted_llm,
    )
    assert proc.returncode == 0, proc.stderr
    rollout = out / "py-ini-comments" / "demo" / "0"
    kept = {p.name for p in (rollout / "verifier").iterdir()}
    assert kept == {"reward.json", "ctrf.json", "verifier_output.txt"}
    ctrf = json.loads((rollout / "verifier" / "ctrf.json").read_text())
    assert len(ctrf["results"]["tests"]) == 4
    assert "PASS test_ini_hidden.TestIni.test_basic" in (rollout / "verifier" / "verifier_output.txt").read_text()
    tests = json.loads((rollout / "reward_extra_info.json").read_text())["tests"]
    assert set(tests["source"]) == {"ctrf.json", "reward.json"}
    assert sorted(tests["f2p"]["passed"]) == [
        "test_ini_hidden.TestIni.test_inline_comments",
        "test_ini_hidden.TestIni.test_semicolon_comments",
    ]
    assert len(tests["p2p"]["passed"]) == 2 and tests["f2p"]["failed"] == tests["p2p"]["failed"] == []
    assert (REPO / "examples" / "demo.jsonl").read_text().count("ctrf.json") >= 1


def test_failed_f2p_and_passed_p2p_are_told_apart_for_a_separate_verifier(
    tmp_path: Path, scripted_llm, run_rollout
) -> None:
    scripted_llm.set_responder(turns(call("submit")))  # changes nothing: f2p fails, p2p passes
    rows = write_rows(tmp_path, write_harbor_task(tmp_path / "tasks"))
    record, rollout = run_rollout(rows, write_harbor_config(tmp_path))
    assert record.reward == 0.0
    tests = json.loads((rollout / "reward_extra_info.json").read_text())["tests"]
    assert tests["f2p"] == {
        "passed": [],
        "failed": ["test_greeting.py::test_says_goodbye"],
        "errored": [],
        "missing": [],
    }
    assert tests["p2p"]["passed"] == ["test_greeting.py::test_file_exists"]
    assert (rollout / "verifier" / "ctrf.json").is_file()
    assert "checked 2 tests" in (rollout / "verifier" / "verifier_output.txt").read_text()


def test_a_listed_test_absent_from_every_report_is_missing(tmp_path: Path) -> None:
    from mimo_core.grading.verifier_reports import summarise_folder

    (tmp_path / "ctrf.json").write_text(
        json.dumps(
            {
                "results": {
                    "tests": [
                        {"name": "tests/test_a.py::test_one", "status": "passed"},
                        {"name": "tests/test_a.py::test_two", "status": "skipped"},
                        {"name": "tests/test_a.py::test_extra", "status": "failed"},
                    ]
                }
            }
        )
    )
    summary = summarise_folder(
        tmp_path,
        {
            "f2p_node_ids": ["tests/test_a.py::test_one", "tests/test_a.py::test_gone"],
            "p2p_node_ids": ["tests/test_a.py::test_two"],
        },
    )
    assert summary is not None
    assert (summary.f2p.passed, summary.f2p.missing) == (["tests/test_a.py::test_one"], ["tests/test_a.py::test_gone"])
    assert summary.p2p.errored == ["tests/test_a.py::test_two"]
    assert summary.other.failed == ["tests/test_a.py::test_extra"]
