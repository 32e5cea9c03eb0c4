"""The Dagster UI on the shared instance shows the partitioned assets and what is materialized."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import DagsterInstance

from mimo_assets.definitions import defs
from mimo_assets.partitions import dataset_name
from testkit import chromium
from testkit.processes import stop_group
from testkit.tasks import write_named_config, write_tasks
from tests.core.conftest import REPO

ARTIFACTS = REPO / "outputs" / "test-artifacts"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, body: bytes) -> bytes:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.read()


@pytest.fixture
def webserver(dagster_env) -> Iterator[str]:
    """`dagster-webserver` in its own process group, stopped by that group (never by name)."""
    port = _free_port()
    exe = Path(sys.executable).with_name("dagster-webserver")
    with open(Path(dagster_env["DAGSTER_HOME"]).parent / "webserver.log", "w") as log:
        proc = subprocess.Popen(
            [str(exe), "-h", "127.0.0.1", "-p", str(port), "-w", "workspace.yaml"],
            cwd=REPO,
            env={**os.environ, **dagster_env},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(proc, url, log.name)
            _post(url + "/graphql", b'{"query": "mutation { setNuxSeen }"}')  # the first-visit modal
            yield url
        finally:
            stop_group(proc)


def _wait_ready(proc: subprocess.Popen, url: str, log: str) -> None:
    deadline = time.monotonic() + 90
    while True:
        try:
            urllib.request.urlopen(url + "/server_info", timeout=2).read()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dagster-webserver did not start: {log}") from None
            time.sleep(0.3)


def _evaluate(instance: DagsterInstance, data: Path, config: Path, **extra) -> bool:
    run = {"ops": {"evaluate_op": {"config": {"dataset": str(data), "configs": [str(config)], "workers": 1, **extra}}}}
    return (
        defs.resolve_job_def("evaluate")
        .execute_in_process(instance=instance, run_config=run, raise_on_error=False)
        .success
    )


def test_ui_partitions_are_planned_failed_or_done_per_dataset_and_the_trend_plot_shows(
    tmp_path: Path,
    dagster_env,
    llm,
    monkeypatch: pytest.MonkeyPatch,
    webserver: str,
) -> None:
    """One webserver, what a team reads in it: 2 of a 4-row dataset planned under `good` (one hit an
    infrastructure error), then a second dataset, whose only instance has the same id, under `other`;
    then the analytics refresh. Neither config makes missing partitions against the other's dataset."""
    monkeypatch.setenv("MIMO_TEST_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("MIMO_TEST_API_KEY", "k")
    first, second = write_tasks(tmp_path / "a", 4), write_tasks(tmp_path / "b", 1)  # both have greet-0
    good, other = write_named_config(tmp_path, "good"), write_named_config(tmp_path, "other")
    instance = DagsterInstance.from_config(dagster_env["DAGSTER_HOME"])
    llm.inject(503, times=3)  # greet-0 of the first dataset exhausts its retries: model_error, an infra error
    assert not _evaluate(instance, first, good, slice="0:2")  # red: one of its partitions failed
    assert _evaluate(instance, second, other)
    assert defs.resolve_job_def("refresh_analytics").execute_in_process(instance=instance).success

    graph = f"{webserver}/locations/mimoagent/asset-groups/rollouts"
    text = chromium.visible_text(chromium.dump_dom(graph))
    for name in ("rollouts", "judge_scores", "graded_results", "converted_jsonl", "config_files"):
        assert name in text, text[:2000]
    assert text.count("3 partitions") == 3, text[:2000]  # planned: 2 + 1, not (4 rows + 1 row) × 2 configs
    page = chromium.visible_text(chromium.dump_dom(f"{webserver}/assets/graded_results?view=partitions"))
    assert "Materialized (2)" in page and "Failed (1)" in page and "Missing (0)" in page, page[:2000]
    runs = chromium.visible_text(chromium.dump_dom(f"{webserver}/runs"))
    assert runs.count("Failure") == 1 and runs.count("Success") >= 2, runs[:2000]  # evaluate ×2, analytics

    trend = chromium.dump_dom(f"{webserver}/assets/pass_rate_trend")  # the overview, no click
    assert re.search(r'<img src="data:image/svg\+xml,[^"]+" alt="pass rate per night"', trend), trend[-5000:]
    line = f"royalblue: good ({dataset_name(str(first))} · rollout) 100%"  # a line per dataset, kind and config
    assert line in chromium.visible_text(trend), chromium.visible_text(trend)[:3000]
    for url, name in ((graph, "dagster_asset_graph.png"), (f"{webserver}/assets/pass_rate_trend", "dagster_trend.png")):
        shot = chromium.screenshot(url, ARTIFACTS / name)
        assert shot.stat().st_size > 20_000
        print(f"screenshot: {shot}")
