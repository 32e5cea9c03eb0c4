"""One writer per output folder: a second run on the same -o stops at once naming the holder."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from mimo_core.output_lock import LOCK_FILE
from mimo_core.results import ResultsStore
from mimo_core.testing.scripted_llm import call, turns
from mimo_core.testing.tasks import write_config, write_tasks
from tests.core.conftest import REPO, SECRET, base_url, run_cli

SOLVE = turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))


def test_a_second_run_on_the_same_output_exits_naming_the_holder(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    scripted_llm.latency = 0.3
    data, cfg, out = write_tasks(workdir, n=3), write_config(workdir, "cfg"), workdir / "out"
    args = ["-c", str(cfg), "--dataset", str(data), "-o", str(out)]
    env = {**os.environ, "MIMO_TEST_BASE_URL": base_url(scripted_llm, "chat"), "MIMO_TEST_API_KEY": SECRET,
           "MIMOAGENT_OBSERVERS": "0"}
    first = subprocess.Popen([sys.executable, "-m", "mimo_core.cli", *args], cwd=REPO, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not scripted_llm.requests:
            time.sleep(0.02)
        second = run_cli(args, scripted_llm)
        assert second.returncode == 2, second.stderr
        assert f"in use by mimoagent pid {first.pid} on host {socket.gethostname()}" in second.stderr
        assert len(second.stderr.strip().splitlines()) == 1
    finally:
        _, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    records = ResultsStore(out).load()
    assert len(records) == 3 and len((out / "results.jsonl").read_text().splitlines()) == 3
    assert len(scripted_llm.requests) == 6  # each rollout paid for once


def test_a_lock_left_by_a_dead_run_is_stale_and_taken(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    data, cfg, out = write_tasks(workdir), write_config(workdir, "cfg"), workdir / "out"
    out.mkdir()
    (out / LOCK_FILE).write_text(json.dumps({"pid": 999999, "host": socket.gethostname(), "run_id": "old",
                                             "started": time.time() - 60}))
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm)
    assert proc.returncode == 0, proc.stderr
    assert ResultsStore(out).load()
