"""Exports that train well by default: `sft` leaves out rollouts that ended in an error (named in its
report; `--include-errors` puts them back), and an export with no row exits non-zero, writing no file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mimo_core.exports.source import ExportFilter
from mimo_core.exports.write import run_export
from mimo_core.records.results import ResultsStore
from mimo_core.status import ExitStatus
from testkit.scripted_llm import ScriptedLLM, call
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import REPO, run_cli


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """greet-0 submits; greet-1 makes one call, then its endpoint fails for good (`model_error`)."""
    work = tmp_path_factory.mktemp("mixed-run")
    data = write_tasks(work, n=2)
    cfg = write_config(work, "cfg")
    out = work / "out"

    def responder(req):
        if "task 1" in json.dumps(req.body) and req.n_assistant_turns >= 1:
            llm.inject(503, times=3)  # the retry after this request fails too: retries exhausted
            return call("bash", command="true")
        return (
            call("edit", path="greeting.txt", old_string="hello", new_string="goodbye")
            if req.n_assistant_turns == 0
            else call("submit")
        )

    with ScriptedLLM(responder) as llm:
        proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], llm)
    statuses = {r.instance_id: r.exit_status for r in ResultsStore(out).load().values()}
    assert statuses == {"greet-0": ExitStatus.SUBMITTED, "greet-1": ExitStatus.MODEL_ERROR}, proc.stderr
    return out


def test_sft_leaves_out_rollouts_that_ended_in_an_error(mixed_run: Path, tmp_path: Path) -> None:
    report = run_export("sft", [mixed_run], tmp_path / "a")
    assert report.rollouts == 1
    [skipped] = report.skipped
    assert skipped.rollout.endswith("greet-1/cfg/0") and "model_error" in skipped.reason
    assert run_export("sft", [mixed_run], tmp_path / "b", ExportFilter(include_errors=True)).rollouts == 2
    named = ExportFilter(statuses=[ExitStatus.MODEL_ERROR])  # asked for by name: exported
    assert run_export("sft", [mixed_run], tmp_path / "c", named).rollouts == 1


def test_an_export_with_no_row_exits_non_zero_and_writes_no_file(mixed_run: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mimo_core.cli", "export", str(mixed_run), "--format", "rl", "-o", str(tmp_path)],
        cwd=REPO,
        text=True,
        capture_output=True,
        timeout=120,
        env={**os.environ, "MIMOAGENT_OBSERVERS": "0"},
    )
    assert proc.returncode == 2, proc.stdout
    [line] = proc.stderr.strip().splitlines()
    assert "rl: nothing to export" in line and "lack token ids" in line
    assert not (tmp_path / "rl.parquet").exists()
    assert json.loads((tmp_path / "rl_report.json").read_text())["rows"] == 0
