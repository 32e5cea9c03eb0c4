"""What the user sees where they look: a rollout that ends in an error says why on its console line, and
the end-of-run table covers the rollouts this run selected (the rest of the folder is counted beside it)."""

from __future__ import annotations

import json
from pathlib import Path

from testkit.scripted_llm import call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import run_cli

SOLVE = turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))


def test_a_rollout_that_ends_in_an_error_prints_why_on_its_line(workdir: Path, scripted_llm) -> None:
    data, cfg, out = write_tasks(workdir), write_config(workdir, "cfg"), workdir / "out"
    scripted_llm.inject(503, times=3)  # the config's 3 attempts all fail
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm)
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("greet-0 [cfg#0]: ")]
    assert line.startswith("greet-0 [cfg#0]: model_error reward=None (") and "503" in line, line


def test_a_recalc_error_says_why_on_its_line(workdir: Path, scripted_llm) -> None:
    cfg, out = write_config(workdir, "cfg"), workdir / "out"
    (workdir / "repo").mkdir()
    (workdir / "repo" / "f.txt").write_text("x\n")
    data = workdir / "rows.jsonl"
    data.write_text(
        json.dumps(
            {
                "instance_id": "no-reward",
                "dataset_type": "generic",
                "repo_dir": "repo",
                "problem_statement": "x",
                "eval_script": "echo verifier ran; exit 3",
                "gold_patch": "",
            }
        )
        + "\n"
    )
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--recalc-input", "gt"], scripted_llm)
    [line] = [ln for ln in proc.stdout.splitlines() if ln.startswith("no-reward [cfg#0]: ")]
    assert line.startswith("no-reward [cfg#0]: Recalculated - Error (") and "reward" in line, line


def test_the_table_covers_this_runs_selection_and_counts_the_rest(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    data, cfg, out = write_tasks(workdir, n=3), write_config(workdir, "cfg"), workdir / "out"
    assert run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm).returncode == 0
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--slice", "0:1"], scripted_llm)
    assert proc.returncode == 0, proc.stderr
    [row] = [ln for ln in proc.stdout.splitlines() if ln.startswith("cfg ")]
    # instances, attempted, errors, graded, passed: this run's selection
    assert row.split()[1:6] == ["1", "1", "0", "1", "1"], row
    assert "the table covers the 1 rollout(s) this run selected" in proc.stdout
    assert "holds 2 more from other selections" in proc.stdout
