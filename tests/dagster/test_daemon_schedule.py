"""Out of the box, under a real `dagster-daemon`: the nightly schedule and the analytics refresh run in a
fresh instance without being turned on; two ticks of the same night start one run (its run key is the
night); the nightly run can be a paired A/B, and the analytics refresh compares it as one."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from dagster import AssetKey, DagsterInstance, DagsterRunStatus
from dagster._core.scheduler.instigation import TickStatus

from testkit.tasks import write_named_config, write_tasks
from tests.core.conftest import REPO
from tests.dagster.conftest import pk


def _wait_for(what: str, check, timeout: float, log: Path):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}; daemon log tail:\n{log.read_text()[-3000:]}")


def test_nightly_ticks_twice_one_run_paired_then_analytics_refresh_by_default(
    tmp_path: Path,
    dagster_env,
    llm,
) -> None:
    data = write_tasks(tmp_path, 2)
    good, bad = write_named_config(tmp_path, "good"), write_named_config(tmp_path, "bad")
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": llm.openai_base_url,
        "MIMO_TEST_API_KEY": "k",
        "MIMOAGENT_NIGHTLY_CRON": "* * * * *",  # a "night" every minute: two ticks within the test
        "MIMOAGENT_NIGHTLY_DATASET": str(data),
        "MIMOAGENT_NIGHTLY_CONFIGS": f"{good}{os.pathsep}{bad}",
        "MIMOAGENT_NIGHTLY_PAIRED": "1",
        "MIMOAGENT_NIGHTLY_WORKERS": "2",
    }
    instance = DagsterInstance.from_config(dagster_env["DAGSTER_HOME"])
    log = tmp_path / "daemon.log"
    with open(log, "w") as out:
        daemon = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "dagster-daemon"), "run", "-w", "workspace.yaml"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:

        def ticks() -> list:
            states = [s for s in instance.all_instigator_state() if s.name == "nightly_eval"]
            return instance.get_ticks(states[0].instigator_origin_id, states[0].selector_id) if states else []

        # Two successful ticks of the same night (the date does not change between them).
        _wait_for(
            "two nightly ticks",
            lambda: len([t for t in ticks() if t.status in (TickStatus.SUCCESS, TickStatus.SKIPPED)]) >= 2,
            200,
            log,
        )
        runs = [r for r in instance.get_runs() if r.tags.get("mimoagent/source") == "nightly"]
        assert len(runs) == 1, [r.tags for r in runs]
        night = runs[0].tags["mimoagent/date"]
        assert {t.status for t in ticks()} >= {TickStatus.SUCCESS, TickStatus.SKIPPED}  # the 2nd: run key seen

        _wait_for("the nightly run", lambda: instance.get_run_by_id(runs[0].run_id).is_finished, 200, log)
        assert instance.get_run_by_id(runs[0].run_id).status == DagsterRunStatus.SUCCESS
        assert instance.get_materialized_partitions(AssetKey("graded_results")) == {
            pk(data, f"greet-{i}", c) for c in ("good", "bad") for i in range(2)
        }  # paired: every config × instance

        # The analytics sensor is on by default and refreshes in one process once nothing is running.
        analytics = _wait_for(
            "an analytics refresh",
            lambda: [r for r in instance.get_runs() if r.job_name == "refresh_analytics" and r.is_finished],
            150,
            log,
        )
        assert analytics[0].status == DagsterRunStatus.SUCCESS
        [ab] = instance.fetch_materializations(AssetKey("ab_comparison"), limit=1).records
        pairs = ab.asset_materialization.metadata["pairs"].value
        assert [(p["a"], p["b"], p["design"], p["shared_instances"]) for p in pairs] == [("bad", "good", "paired", 2)]
        assert pairs[0]["difference"] == 1.0 and pairs[0]["flipped_to_pass"] == ["greet-0", "greet-1"]
        assert night
    finally:
        os.killpg(daemon.pid, signal.SIGKILL)  # the daemon and the run processes it launched
        daemon.wait()
