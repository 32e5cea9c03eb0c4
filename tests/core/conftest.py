"""Fixtures for end-to-end rollouts: a tiny generic task with a real repo and a real verifier."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-test-SECRET-4c1d9e"  # must never appear under an output folder

EVAL = (
    "mkdir -p /logs/verifier; "
    "if grep -q goodbye greeting.txt; then echo 1 > /logs/verifier/reward.txt; "
    "else echo 0 > /logs/verifier/reward.txt; fi"
)


def write_dataset(folder: Path, n: int = 1) -> Path:
    (folder / "repo").mkdir(parents=True, exist_ok=True)
    (folder / "repo" / "greeting.txt").write_text("hello\n")
    rows = [
        {"instance_id": f"greet-{i}", "dataset_type": "generic", "repo_dir": "repo", "eval_script": EVAL,
         "problem_statement": "Make greeting.txt say goodbye."}
        for i in range(n)
    ]
    path = folder / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_config(folder: Path, name: str, protocol: str = "chat", **agent: object) -> Path:
    cfg = {
        "agent": {"type": "default", "step_limit": 10, **agent},
        "environment": {"environment_class": "local", "timeout": 30},
        "model": {
            "model_name": "scripted-model", "protocol": protocol,
            "model_kwargs": {"base_url": "${MIMO_TEST_BASE_URL}", "api_key": "${MIMO_TEST_API_KEY}"},
            "retry": {"max_attempts": 3, "initial_delay": 0.01, "max_delay": 0.05, "timeout": 5},
            "pricing": {"input": 1.0, "output": 2.0},
        },
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def base_url(server, protocol: str) -> str:
    return server.url if protocol == "anthropic" else server.openai_base_url


def run_cli(
    args: list[str], server, protocol: str = "chat", timeout: float = 120, **popen
) -> subprocess.CompletedProcess:
    env = {**os.environ, "MIMO_TEST_BASE_URL": base_url(server, protocol), "MIMO_TEST_API_KEY": SECRET,
           "MIMOAGENT_RECORDERS": "0"}
    return subprocess.run([sys.executable, "-m", "mimo_core.cli", *args], cwd=REPO, env=env, text=True,
                          capture_output=True, timeout=timeout, **popen)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path
