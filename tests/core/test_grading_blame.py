"""A grading failure the agent caused is its 0, not a rerun: when the reference solution grades cleanly in
the same image, the failure follows the agent's changes. Failures that also happen to the reference (or
tasks with no reference to check) stay infrastructure errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mimo_core.records.results import ResultRecord
from mimo_core.run.batch import run_jobs
from mimo_core.run.plan import RunRequest, plan_run
from testkit.scripted_llm import ScriptedLLM, call, turns
from testkit.tasks import write_config
from tests.core.conftest import SECRET, base_url

# The verifier runs the repository's code: what the agent writes there runs in grading.
EVAL = (
    "mkdir -p /logs/verifier; out=$(python3 run.py); "
    'if [ "$out" = ok ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi'
)
GOLD = "diff --git a/run.py b/run.py\n--- a/run.py\n+++ b/run.py\n@@ -1 +1 @@\n-print('not yet')\n+print('ok')\n"


def _run(folder: Path, server: ScriptedLLM, monkeypatch: pytest.MonkeyPatch, **row: Any) -> ResultRecord:
    monkeypatch.setenv("MIMO_TEST_BASE_URL", base_url(server, "chat"))
    monkeypatch.setenv("MIMO_TEST_API_KEY", SECRET)
    (folder / "repo").mkdir()
    (folder / "repo" / "run.py").write_text("print('not yet')\n")
    task = {
        "instance_id": "t",
        "dataset_type": "generic",
        "repo_dir": "repo",
        "eval_script": EVAL,
        "eval_timeout": 3,
        "gold_patch": GOLD,
        "problem_statement": "make run.py print ok",
        **row,
    }
    task = {k: v for k, v in task.items() if v is not None}
    data = folder / "tasks.jsonl"
    data.write_text(json.dumps(task) + "\n")
    cfg = write_config(folder, "cfg")
    request = RunRequest(dataset=str(data), configs=[str(cfg)], output_dir=folder / "out", run_id="run-blame")
    [record] = run_jobs(plan_run(request).jobs)
    return record


HANG = "printf 'import time\\ntime.sleep(60)\\n' > run.py"


KILL = "printf 'import os\\nos.kill(os.getppid(), 9)\\n' > run.py"


@pytest.mark.parametrize(
    "command",
    [HANG, "rm -rf .git/objects/*", "rm -rf .git/refs .git/HEAD"],
    ids=["verifier-hangs", "objects-deleted", "head-deleted"],
)
def test_a_grading_failure_after_the_agents_changes_is_its_zero(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedLLM(turns(call("bash", command=command), call("submit"))) as server:
        rec = _run(tmp_path, server, monkeypatch)
    assert (rec.exit_status, rec.reward, rec.passed, rec.infra_error) == ("submitted", 0.0, False, False), rec
    assert "grading_failed_after_agent" in rec.grading and rec.grading["reference_check"] == "clean"


def test_code_under_test_that_kills_the_verifier_gets_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed verifier: its shells leave processes behind or it ends abnormally; either way the agent's 0."""
    with ScriptedLLM(turns(call("bash", command=KILL), call("submit"))) as server:
        rec = _run(tmp_path, server, monkeypatch)
    assert (rec.exit_status, rec.reward, rec.passed, rec.infra_error) == ("submitted", 0.0, False, False), rec
    assert "grading_failed_after_agent" in rec.grading or rec.containment.get("forged_verdict"), rec


def test_the_honest_fix_still_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedLLM(turns(call("bash", command="echo \"print('ok')\" > run.py"), call("submit"))) as server:
        rec = _run(tmp_path, server, monkeypatch)
    assert (rec.exit_status, rec.reward, rec.passed) == ("submitted", 1.0, True), rec
    assert "grading_failed_after_agent" not in rec.grading


def test_a_verifier_broken_for_the_reference_too_stays_an_infrastructure_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedLLM(turns(call("bash", command=HANG), call("submit"))) as server:
        rec = _run(tmp_path, server, monkeypatch, eval_script="sleep 30")
    assert (rec.exit_status, rec.infra_error, rec.reward) == ("grading_error", True, None), rec
    assert rec.grading["reference_check"] == "failed"


def test_without_a_reference_the_failure_cannot_be_blamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedLLM(turns(call("bash", command=HANG), call("submit"))) as server:
        rec = _run(tmp_path, server, monkeypatch, gold_patch=None)
    assert (rec.exit_status, rec.infra_error) == ("grading_error", True), rec
    assert rec.grading["reference_check"] == "unavailable"
