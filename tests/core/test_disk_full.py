"""A disk that fills up mid-run stops new rollouts with one clear line and loses nothing finished."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mimo_core.cli.parser import EXIT_DISK_FULL
from mimo_core.records.results import ResultsStore
from testkit.scripted_llm import call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import run_cli
from tests.host_needs import unavailable

SOLVE = turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 400 KiB tmpfs (room for a handful of rollouts), unmounted after the test."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        unavailable(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_disk_stops_the_run_and_loses_nothing_finished(workdir: Path, scripted_llm, small_disk: Path):
    scripted_llm.set_responder(SOLVE)
    data, cfg, out = write_tasks(workdir, n=20), write_config(workdir, "cfg"), small_disk / "out"
    cfg.write_text(cfg.read_text().replace("timeout: 30", "timeout: 30\n  host_min_free_mb: 0"))  # ENOSPC itself
    args = ["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--workers", "2"]
    full = run_cli(args, scripted_llm)
    assert full.returncode == EXIT_DISK_FULL, full.stderr
    assert "no space left on the device" in full.stderr and "Traceback" not in full.stderr
    survived = ResultsStore(out).load()
    assert 0 < len(survived) < 20
    for rec in survived.values():  # every record points at complete files
        assert rec.passed and (out / rec.output_dir / "traj.json").stat().st_size > 0
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
    done = run_cli(args, scripted_llm)
    assert done.returncode == 0, done.stderr
    final = ResultsStore(out).load()
    assert len(final) == 20 and all(r.passed for r in final.values())
    assert all(final[k] == v for k, v in survived.items())
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 20


def test_below_the_low_water_mark_no_rollout_starts_and_the_run_says_why(workdir: Path, scripted_llm, small_disk: Path):
    """The host's free space under environment.host_min_free_mb: the run stops before starting rollouts
    (a neighbour filling the disk cannot take the ones after it down), and resumes once there is room."""
    scripted_llm.set_responder(SOLVE)
    data, cfg, out = write_tasks(workdir, n=4), write_config(workdir, "cfg"), small_disk / "out"
    cfg.write_text(cfg.read_text().replace("timeout: 30", "timeout: 30\n  host_min_free_mb: 5"))
    args = ["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--workers", "2"]
    low = run_cli(args, scripted_llm)  # 400 KiB free < 5 MB
    assert low.returncode == EXIT_DISK_FULL, low.stderr
    assert "below the low-water mark (environment.host_min_free_mb: 5)" in low.stderr, low.stderr
    assert "Traceback" not in low.stderr and len(ResultsStore(out).load()) == 0
    subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], check=True)
    done = run_cli(args, scripted_llm)
    assert done.returncode == 0, done.stderr
    assert len(ResultsStore(out).load()) == 4
