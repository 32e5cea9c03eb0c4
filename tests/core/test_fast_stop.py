"""SIGTERM stops a run within seconds even while a command sleeps; a second signal stops at once.
Either way no sandbox folder is left and every stopped rollout has its traj.json."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from mimo_core.results import ResultsStore
from mimo_core.testing.scripted_llm import call, turns
from mimo_core.testing.tasks import write_config, write_tasks
from tests.core.conftest import REPO, SECRET, base_url


def _start(workdir: Path, server, n: int = 2) -> tuple[subprocess.Popen, Path, Path]:
    data, cfg, out = write_tasks(workdir, n=n), write_config(workdir, "cfg"), workdir / "out"
    sandboxes = workdir / "sandboxes"
    sandboxes.mkdir()
    doc = yaml.safe_load(cfg.read_text())
    doc["environment"]["backend_kwargs"] = {"root": str(sandboxes)}
    doc["environment"]["timeout"] = 120
    cfg.write_text(yaml.safe_dump(doc))
    env = {**os.environ, "MIMO_TEST_BASE_URL": base_url(server, "chat"), "MIMO_TEST_API_KEY": SECRET,
           "MIMOAGENT_OBSERVERS": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "mimo_core.cli", "-c", str(cfg), "--dataset", str(data),
                             "-o", str(out), "--workers", str(n)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, out, sandboxes


def _wait_for_requests(server, n: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(server.requests) < n:
        time.sleep(0.02)
    time.sleep(0.5)  # the commands are running now


def _check_stopped(proc: subprocess.Popen, out: Path, sandboxes: Path, n: int) -> None:
    assert proc.returncode == 130
    assert list(sandboxes.iterdir()) == []
    records = ResultsStore(out).load()
    assert len(records) == n and all(r.exit_status == "interrupted" for r in records.values())
    for r in records.values():
        assert (out / r.output_dir / "traj.json").exists()


@pytest.mark.parametrize("signals", [1, 2])
def test_sigterm_during_a_long_command_stops_within_seconds(workdir: Path, scripted_llm, signals: int) -> None:
    scripted_llm.set_responder(turns(call("bash", command="sleep 60"), call("submit")))
    proc, out, sandboxes = _start(workdir, scripted_llm)
    _wait_for_requests(scripted_llm, 2)
    start = time.monotonic()
    for _ in range(signals):
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.05)
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - start < 5, err
    _check_stopped(proc, out, sandboxes, 2)


def test_sigterm_during_a_model_call_does_not_wait_for_the_request_timeout(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(turns(call("submit")))
    scripted_llm.inject(0, times=2, delay=30)  # the server sits on both first requests
    proc, out, sandboxes = _start(workdir, scripted_llm)
    _wait_for_requests(scripted_llm, 2)
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - start < 5, err
    _check_stopped(proc, out, sandboxes, 2)
