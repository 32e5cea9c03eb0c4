"""Live recording (MIMOAGENT_DAGSTER_LIVE=1): the CLI waits at most MIMOAGENT_DAGSTER_WAIT seconds for its
Dagster record; the record still completes."""

from __future__ import annotations

import time
from pathlib import Path

from dagster import AssetKey

from mimo_assets.cli_recording.live import WAIT_LINE
from mimo_assets.cli_recording.observer import LOG_FILE
from mimo_assets.instance.home import get_instance
from testkit.tasks import write_named_config, write_tasks
from tests.dagster.conftest import pk, run_cli


def test_a_short_run_returns_without_waiting_for_dagster_and_is_recorded_in_the_background(
    tmp_path: Path,
    dagster_env,
    llm,
) -> None:
    data = write_tasks(tmp_path, 2)
    cfg = write_named_config(tmp_path, "good")
    out = tmp_path / "out"
    proc = run_cli(
        ["-c", str(cfg), "--dataset", str(data), "-o", str(out)],
        llm,
        {**dagster_env, "MIMOAGENT_DAGSTER_LIVE": "1", "MIMOAGENT_DAGSTER_WAIT": "0"},
        ingest=False,
    )
    assert "recording finishes in the background" in proc.stderr
    assert f"{WAIT_LINE} 0.0" in (out / LOG_FILE).read_text()
    # The recorder may still be creating this new home's tables: open it as every mimoagent process does,
    # under the home's lock (a bare DagsterInstance.from_config would race it for the schema).
    instance = get_instance()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(instance.get_materialized_partitions(AssetKey("graded_results"))) < 2:
        time.sleep(0.2)
    assert instance.get_materialized_partitions(AssetKey("graded_results")) == {
        pk(data, "greet-0", "good"),
        pk(data, "greet-1", "good"),
    }
    while time.monotonic() < deadline and instance.get_runs()[0].status.value != "SUCCESS":
        time.sleep(0.2)
    assert [r.status.value for r in instance.get_runs()] == ["SUCCESS"]
