"""The CLI's failure modes: one line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.tasks import write_config, write_tasks
from tests.core.conftest import REPO


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": "http://127.0.0.1:9/v1",
        "MIMO_TEST_API_KEY": "k",
        "MIMOAGENT_OBSERVERS": "0",
    }
    return subprocess.run(
        [sys.executable, "-m", "mimo_core.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=60, env=env
    )


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--workers", "0"], "--workers must be between 1 and"),
        (["--workers", "many"], "invalid int value"),
        (["--retries", "-1"], "--retries must be between 0 and"),
        (["--retry-delay", "nan"], "--retry-delay must be between 0 and 3600"),
        (["--retries", "1", "--runner", "ray"], "--retries needs the thread runner"),
        (["--slice", "a:b"], "--slice"),
        (["--filter", "("], "--filter"),
        (["--override-config", "{nope"], "--override-config"),
        (["--bogus"], "unrecognized arguments"),
    ],
)
def test_bad_flags_give_one_line_and_exit_2(tmp_path: Path, extra: list[str], message: str) -> None:
    data, cfg = write_tasks(tmp_path), write_config(tmp_path, "cfg")
    proc = _run("-c", str(cfg), "--dataset", str(data), "-o", str(tmp_path / "o"), *extra)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_bad_config_names_file_and_key(tmp_path: Path) -> None:
    data = write_tasks(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text("environment:\n  timeout: soon\n")
    proc = _run("-c", str(bad), "--dataset", str(data), "-o", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert "bad.yaml: environment.timeout" in proc.stderr and "Traceback" not in proc.stderr


def test_missing_dataset_is_a_clear_error(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, "cfg")
    proc = _run("-c", str(cfg), "--dataset", str(tmp_path / "none.jsonl"), "-o", str(tmp_path / "o"))
    assert proc.returncode == 2 and "none.jsonl" in proc.stderr and "Traceback" not in proc.stderr


def test_help_is_fast_and_lists_flags() -> None:
    proc = _run("--help")
    assert proc.returncode == 0
    for flag in (
        "--dataset",
        "--slice",
        "--filter",
        "--shuffle",
        "--workers",
        "--num-rollouts",
        "--redo-existing",
        "--override-config",
        "--recalc-input",
    ):
        assert flag in proc.stdout
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mimo_core.cli", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    ).stderr
    for heavy in ("dagster", "datasets", "docker", "openai", "anthropic", "polars"):
        assert f" {heavy}\n" not in out and f"| {heavy}\n" not in out, f"{heavy} imported by --help"
