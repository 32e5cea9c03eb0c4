"""A CLI run killed with SIGKILL: what it finished is recorded from its registry entry (no rerun needed),
the killed run does not show as succeeded, and the rerun records the rest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dagster import AssetKey, DagsterInstance, DagsterRunStatus

from testkit.scripted_llm import Reply, Request, ScriptedLLM, call
from testkit.tasks import write_named_config, write_tasks
from tests.core.conftest import REPO, SECRET
from tests.dagster.conftest import EDIT, ingest_finished_runs, pk, run_cli

GRADED = AssetKey("graded_results")


def _hangs_on_greet_1(req: Request) -> Reply:
    """Solves greet-0; on greet-1 runs a command that outlives the test's patience."""
    if "(task 1)" in json.dumps(req.body["messages"][:2]):
        return call("bash", command="sleep 60")
    return EDIT if req.n_assistant_turns == 0 else call("submit")


def _wait(what: str, done, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_a_killed_runs_finished_rollouts_are_in_dagster_before_any_rerun_and_it_is_not_a_success(
    tmp_path: Path,
    dagster_env,
    llm,
) -> None:
    data, cfg, out = write_tasks(tmp_path, 2), write_named_config(tmp_path, "good"), tmp_path / "out"
    args = ["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--workers", "1"]
    instance = DagsterInstance.from_config(dagster_env["DAGSTER_HOME"])
    assert instance.get_runs() == []  # its storage is made now, not while the recording child makes it
    with ScriptedLLM(_hangs_on_greet_1) as hanging:
        env = {**os.environ, **dagster_env, "MIMO_TEST_BASE_URL": hanging.openai_base_url, "MIMO_TEST_API_KEY": SECRET}
        env.pop("MIMOAGENT_OBSERVERS", None)
        runner = subprocess.Popen(
            [sys.executable, "-m", "mimo_core.cli", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            results = out / "results.jsonl"
            _wait(
                "greet-0 finished and greet-1 at work",
                lambda: (
                    results.is_file()
                    and len(results.read_text().splitlines()) == 1
                    and any("(task 1)" in json.dumps(r.body["messages"][:2]) for r in hanging.requests)
                ),
            )
        finally:
            runner.send_signal(signal.SIGKILL)
            runner.wait()
    [line] = ingest_finished_runs()  # the killed CLI's entry: its process is gone, so it is recorded now
    assert "recorded" in line
    [killed] = instance.get_runs()
    assert killed.status == DagsterRunStatus.FAILURE and killed.tags["mimoagent/source"] == "cli"
    assert instance.get_materialized_partitions(GRADED) == {pk(data, "greet-0", "good")}

    run_cli(args, llm, dagster_env)  # the rerun does greet-1
    assert instance.get_materialized_partitions(GRADED) == {pk(data, "greet-0", "good"), pk(data, "greet-1", "good")}
    assert len(instance.fetch_materializations(GRADED, limit=100).records) == 2  # each partition once


def test_finished_rollouts_dagster_never_recorded_are_recorded_by_the_next_run(
    tmp_path: Path,
    dagster_env,
    llm,
) -> None:
    """As when a run is killed together with its recording child: the next run over the folder records them."""
    data, cfg, out = write_tasks(tmp_path, 2), write_named_config(tmp_path, "good"), tmp_path / "out"
    args = ["-c", str(cfg), "--dataset", str(data), "-o", str(out)]
    run_cli([*args, "--filter", "^greet-0$"], llm, {**dagster_env, "MIMOAGENT_DAGSTER": "0"})
    instance = DagsterInstance.from_config(dagster_env["DAGSTER_HOME"])
    assert instance.get_materialized_partitions(GRADED) == set()
    run_cli(args, llm, dagster_env)  # plans greet-1 only: greet-0 is finished
    assert instance.get_materialized_partitions(GRADED) == {pk(data, "greet-0", "good"), pk(data, "greet-1", "good")}
    assert len(instance.fetch_materializations(AssetKey("rollouts"), limit=100).records) == 2
    run_cli([*args, "--redo-existing", "--filter", "^greet-1$"], llm, dagster_env)
    assert len(instance.fetch_materializations(AssetKey("rollouts"), limit=100).records) == 3  # no re-record
