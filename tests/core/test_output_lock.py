"""One writer per output folder: a second run on the same -o stops at once naming the holder."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from mimo_core.records.results import ResultsStore
from mimo_core.run.output_lock import LOCK_FILE
from testkit.scripted_llm import call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import REPO, SECRET, base_url, run_cli

SOLVE = turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))


def _start(args: list[str], server) -> subprocess.Popen:
    """The first run, in the background (the test waits for it in a finally)."""
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": base_url(server, "chat"),
        "MIMO_TEST_API_KEY": SECRET,
        "MIMOAGENT_OBSERVERS": "0",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "mimo_core.cli", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_second_run_on_the_same_output_exits_naming_the_holder(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    scripted_llm.latency = 0.3
    data, cfg, out = write_tasks(workdir, n=3), write_config(workdir, "cfg"), workdir / "out"
    args = ["-c", str(cfg), "--dataset", str(data), "-o", str(out)]
    first = _start(args, scripted_llm)
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
    (out / LOCK_FILE).write_text(
        json.dumps({"pid": 999999, "host": socket.gethostname(), "run_id": "old", "started": time.time() - 60})
    )
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm)
    assert proc.returncode == 0, proc.stderr
    assert ResultsStore(out).load()


def test_deleting_the_lock_file_by_hand_lets_no_second_run_in(workdir: Path, scripted_llm) -> None:
    """A user removes `.mimoagent.lock` (and the old results lock beside results.jsonl) while a run
    writes: a second run on the folder is still refused, and none of the first run's lines is lost."""
    scripted_llm.set_responder(SOLVE)
    scripted_llm.latency = 1.0  # 8 rollouts of 2 calls on 2 workers: ~8 s, the second run comes at ~1-3 s
    data, cfg, out = write_tasks(workdir, n=8), write_config(workdir, "cfg"), workdir / "out"
    args = ["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--workers", "2"]
    first = _start(args, scripted_llm)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (out / "results.jsonl").exists():
            time.sleep(0.02)
        for name in (LOCK_FILE, "results.jsonl.lock"):
            (out / name).unlink(missing_ok=True)
        second = run_cli([*args, "--redo-existing"], scripted_llm)
        assert first.poll() is None, "the first run ended before the second one tried: nothing was tested"
        assert second.returncode == 2 and "in use by" in second.stderr, second.stderr
    finally:
        _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 8 and len(ResultsStore(out).load()) == 8
    assert {json.loads(line)["run_id"] for line in lines} == {ResultsStore(out).load()[("greet-0", "cfg", 0)].run_id}
