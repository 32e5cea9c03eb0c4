"""Fixtures for end-to-end rollouts: a tiny generic task with a real repo and a real verifier."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-test-SECRET-4c1d9e"  # must never appear under an output folder


def base_url(server, protocol: str) -> str:
    return server.url if protocol == "anthropic" else server.openai_base_url


def run_cli(
    args: list[str], server, protocol: str = "chat", timeout: float = 120, **popen
) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": base_url(server, protocol),
        "MIMO_TEST_API_KEY": SECRET,
        "MIMOAGENT_OBSERVERS": "0",
    }
    return subprocess.run(
        [sys.executable, "-m", "mimo_core.cli", *args],
        cwd=REPO,
        env=env,
        text=True,
        capture_output=True,
        timeout=timeout,
        **popen,
    )


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path
