"""Inputs that used to hang, eat memory, end in a traceback or be accepted and go wrong later: each is one
line on stderr naming the file and the key, exit 2, nothing run. The corpus lives in testkit/bad_inputs.py
(bench/bench_hostile.py counts it too); every run is bounded (3 GiB of address space, 60 s), so a
regression fails here instead of taking the machine with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.bad_inputs import CASES, bounded
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import SECRET, base_url


def _run(args: list[str], server, cwd: Path) -> subprocess.CompletedProcess:
    """The CLI in `cwd` (the test's own folder: an input wrongly accepted as "here" writes nowhere else)."""
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": base_url(server, "chat"),
        "MIMO_TEST_API_KEY": SECRET,
        "MIMOAGENT_OBSERVERS": "0",
    }
    return subprocess.run(
        [sys.executable, "-m", "mimo_core.cli", *args],
        cwd=cwd,
        env=env,
        text=True,
        capture_output=True,
        timeout=60,
        preexec_fn=bounded,
    )


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_input_is_one_line_and_exit_2(workdir: Path, scripted_llm, case: str) -> None:
    data, cfg, out = write_tasks(workdir), write_config(workdir, "cfg"), workdir / "out"
    build, message = CASES[case]
    args = build(workdir, data, cfg, str(out))
    proc = _run(args, scripted_llm, workdir)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert message in proc.stderr, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr[-3000:]
    assert scripted_llm.requests == []
    assert not (out / "results.jsonl").exists() and not (workdir / "results.jsonl").exists()
