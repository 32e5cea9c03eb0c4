"""`mimoagent cleanup` never hurts a live run: it refuses to remove a running run's sandboxes unless told
(--force), and a rollout whose sandbox was removed under it is the infrastructure's failure
(environment_error, redone on resume), never the agent's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from mimo_core.records.results import ResultsStore
from testkit.scripted_llm import call, turns
from tests.core.conftest import REPO
from tests.core.test_fast_stop import _killed_on_exit, _start, _wait_for_requests


def _cleanup(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mimo_core.cli", "cleanup", *args],
        cwd=REPO,
        text=True,
        capture_output=True,
        timeout=120,
        env={**os.environ},
    )


def test_cleanup_leaves_a_live_runs_sandboxes_alone_and_says_so(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(turns(call("bash", command="sleep 60"), call("submit")))
    proc, out, sandboxes = _start(workdir, scripted_llm)
    with _killed_on_exit(proc):
        _wait_for_requests(scripted_llm, 2)
        held = sorted(sandboxes.iterdir())
        assert len(held) == 2
        refused = _cleanup("--root", str(sandboxes))
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "left 2 sandbox(es) alone because their run is still going" in refused.stderr
        assert "--force" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
        assert sorted(sandboxes.iterdir()) == held
        quiet = _cleanup("--stale-only", "--root", str(sandboxes))  # what scripts call: no complaint
        assert quiet.returncode == 0 and quiet.stderr == "" and sorted(sandboxes.iterdir()) == held
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert {r.exit_status for r in ResultsStore(out).load().values()} == {"interrupted"}


def test_a_sandbox_removed_under_a_running_rollout_is_an_environment_error(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(turns(call("bash", command="sleep 60"), call("submit")))
    proc, out, sandboxes = _start(workdir, scripted_llm)
    with _killed_on_exit(proc):
        _wait_for_requests(scripted_llm, 2)
        forced = _cleanup("--force", "--root", str(sandboxes))
        assert forced.returncode == 0 and "removed 2 local sandbox(es)" in forced.stdout, forced.stdout + forced.stderr
        _, err = proc.communicate(timeout=120)
    records = ResultsStore(out).load().values()
    assert [r.exit_status for r in records] == ["environment_error"] * 2, err
    assert all("was removed while the rollout was running" in (r.error or "") for r in records)
    assert proc.returncode == 3  # every rollout an infrastructure error
