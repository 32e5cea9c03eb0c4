"""The CLI's exit status tells a script whether anything was graded at all."""

from __future__ import annotations

from pathlib import Path

from mimo_core.cli.parser import EXIT_ALL_INFRA
from testkit.scripted_llm import call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import run_cli


def test_every_rollout_an_infra_error_exits_non_zero(workdir: Path, scripted_llm) -> None:
    scripted_llm.inject(503, times=100)
    data, cfg, out = write_tasks(workdir, n=2), write_config(workdir, "cfg"), workdir / "out"
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm)
    assert proc.returncode == EXIT_ALL_INFRA == 3, proc.stderr
    assert "every rollout of this run (2) ended in an infrastructure error" in proc.stderr


def test_one_graded_rollout_is_enough_for_exit_0(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(turns(call("submit")))
    scripted_llm.inject(503, times=3)  # the first rollout's three attempts fail, the second is graded
    data, cfg, out = write_tasks(workdir, n=2), write_config(workdir, "cfg"), workdir / "out"
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm)
    assert proc.returncode == 0, proc.stderr
    assert "model_error" in proc.stderr and "submitted" in proc.stderr
