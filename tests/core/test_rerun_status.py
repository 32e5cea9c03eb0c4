"""--rerun-status: rerun exactly the finished rollouts that ended with the named statuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from mimo_core.cli.parser import build_parser
from mimo_core.records.results import ResultsStore
from mimo_core.run.attempts import ATTEMPTS_DIR
from mimo_core.status import ExitStatus
from testkit.scripted_llm import call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import run_cli

SOLVE = turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))


def _cli(data: Path, cfg: Path, out: Path, *extra: str) -> list[str]:
    return ["-c", str(cfg), "--dataset", str(data), "-o", str(out), *extra]


def test_rerun_status_reruns_only_rollouts_with_those_statuses(workdir: Path, scripted_llm) -> None:
    data, cfg, out = write_tasks(workdir, n=3), write_config(workdir, "cfg"), workdir / "out"
    scripted_llm.inject(503, times=3)  # greet-0: its 3 attempts fail -> model_error
    scripted_llm.inject(401, times=1)  # greet-1: rejected key -> model_auth_error (also an infra status)
    scripted_llm.set_responder(SOLVE)
    assert run_cli(_cli(data, cfg, out), scripted_llm).returncode == 0
    before = ResultsStore(out).load()
    by_id = {k[0]: r for k, r in before.items()}
    assert by_id["greet-0"].exit_status == ExitStatus.MODEL_ERROR
    assert by_id["greet-1"].exit_status == ExitStatus.MODEL_AUTH_ERROR
    assert by_id["greet-2"].exit_status == ExitStatus.SUBMITTED
    n_requests = len(scripted_llm.requests)

    proc = run_cli(_cli(data, cfg, out, "--rerun-status", "model_error"), scripted_llm)
    assert proc.returncode == 0, proc.stderr
    assert "1 rollouts to run" in proc.stderr
    assert len(scripted_llm.requests) == n_requests + 2  # greet-0's two calls, nothing else
    after = {k[0]: r for k, r in ResultsStore(out).load().items()}
    assert after["greet-0"].exit_status == ExitStatus.SUBMITTED and after["greet-0"].passed
    assert after["greet-0"].attempts == 2  # the failed attempt is kept as evidence
    kept = out / after["greet-0"].output_dir / ATTEMPTS_DIR / "1" / "traj.json"
    assert '"model_error"' in kept.read_text()
    assert after["greet-1"] == by_id["greet-1"]  # an infra status not named is left as it was
    assert after["greet-2"] == by_id["greet-2"]

    # A status a plain resume keeps is rerun when named, replaced in place as --redo-existing replaces it.
    proc = run_cli(_cli(data, cfg, out, "--rerun-status", "submitted,step_limit"), scripted_llm)
    assert proc.returncode == 0 and "2 rollouts to run" in proc.stderr
    final = {k[0]: r for k, r in ResultsStore(out).load().items()}
    assert final["greet-2"].run_id != by_id["greet-2"].run_id and final["greet-2"].attempts == 1
    assert not (out / final["greet-2"].output_dir / ATTEMPTS_DIR).exists()
    assert final["greet-1"] == by_id["greet-1"]


def test_rerun_status_unknown_name_exits_2_with_one_line(workdir: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(
            ["-c", "c.yaml", "--dataset", "d", "-o", "o", "--rerun-status", "model_error,modle_eror"]
        )
    assert exc.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "modle_eror" in lines[0] and "grading_error" in lines[0]


def test_rerun_status_with_redo_existing_exits_2(workdir: Path, scripted_llm) -> None:
    data, cfg, out = write_tasks(workdir, n=1), write_config(workdir, "cfg"), workdir / "out"
    proc = run_cli(_cli(data, cfg, out, "--rerun-status", "model_error", "--redo-existing"), scripted_llm)
    assert proc.returncode == 2 and "--rerun-status" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (out / "results.jsonl").exists()
