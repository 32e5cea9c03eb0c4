"""The Dagster UI on the shared instance shows the partitioned assets and what is materialized."""

from __future__ import annotations

import os
import signal
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
from mimo_core.testing import chromium
from mimo_core.testing.tasks import write_named_config, write_tasks
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
        proc = subprocess.Popen([str(exe), "-h", "127.0.0.1", "-p", str(port), "-w", "workspace.yaml"], cwd=REPO,
                                env={**os.environ, **dagster_env}, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(proc, url, log.name)
            _post(url + "/graphql", b'{"query": "mutation { setNuxSeen }"}')  # the first-visit modal
            yield url
        finally:
            _stop_group(proc)


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


def _stop_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_asset_graph_shows_partitioned_assets_and_materialization_status(
    tmp_path: Path, dagster_env, llm, monkeypatch: pytest.MonkeyPatch, webserver: str,
) -> None:
    monkeypatch.setenv("MIMO_TEST_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("MIMO_TEST_API_KEY", "k")
    data = write_tasks(tmp_path, 4)
    good, bad = write_named_config(tmp_path, "good"), write_named_config(tmp_path, "bad")
    instance = DagsterInstance.from_config(dagster_env["DAGSTER_HOME"])
    config = {"dataset": str(data), "configs": [str(good)], "workers": 4, "slice": "0:2"}
    assert defs.resolve_job_def("evaluate").execute_in_process(
        instance=instance, run_config={"ops": {"evaluate_op": {"config": config}}}).success
    from mimo_assets.helpers.inputs import config_events

    config_events(instance, [str(bad)])  # registers a second config: 4 instances × 2 configs = 8 partitions

    graph = f"{webserver}/locations/mimoagent/asset-groups/rollouts"
    text = chromium.visible_text(chromium.dump_dom(graph))
    for name in ("rollouts", "judge_scores", "graded_results", "converted_jsonl", "config_files"):
        assert name in text, text[:2000]
    assert text.count("8 partitions") == 3 and "25% filled" in text, text[:2000]

    page = chromium.visible_text(chromium.dump_dom(f"{webserver}/assets/graded_results?view=partitions"))
    assert "Materialized (2)" in page and "Missing (6)" in page, page[:2000]

    shot = chromium.screenshot(graph, ARTIFACTS / "dagster_asset_graph.png")
    assert shot.stat().st_size > 20_000
    print(f"screenshot: {shot}")
