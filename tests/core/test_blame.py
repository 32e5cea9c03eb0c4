"""An agent that destroys its own working directory is blamed for it: graded 0, not retried forever."""

from __future__ import annotations

from pathlib import Path

import pytest

from mimo_core.records.results import ResultsStore
from testkit.scripted_llm import ScriptedLLM, call, turns
from tests.core.test_limits import run_inprocess


@pytest.mark.parametrize("command", ['rm -rf "$PWD"', 'cd / && rm -rf "$OLDPWD"', "rm -rf ./* ./.[!.]*"])
def test_an_agent_that_destroys_its_working_directory_gets_its_own_status(
    command: str, workdir: Path, monkeypatch
) -> None:
    with ScriptedLLM(turns(call("bash", command=command), call("submit"))) as server:
        rec = run_inprocess(workdir, server, monkeypatch)
    assert (rec.exit_status, rec.infra_error, rec.reward, rec.passed) == ("agent_error", False, 0.0, False)
    assert "removed or emptied its own working directory" in (rec.error or "")
    assert rec.key in ResultsStore(workdir / "out").finished()  # a resume does not replay it
