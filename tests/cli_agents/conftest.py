"""Fixtures for the blackbox CLI agents: real installs from the registries into a cache shared by the
test session (MIMOAGENT_CACHE_DIR), configs pointing a CLI at the scripted server."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("MIMOAGENT_TEST_CLI_CACHE") or Path.home() / ".cache" / "mimoagent-tests")


def needs_npm() -> None:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed on this host (needed to install CLI agents from the npm registry)")


@pytest.fixture(autouse=True)
def cli_cache(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Installs are slow (hundreds of MB): one cache per machine, reused across test runs."""
    monkeypatch.setenv("MIMOAGENT_CACHE_DIR", str(CACHE))
    return CACHE


def write_cli_config(folder: Path, name: str, cli: str, protocol: str, **agent: object) -> Path:
    cfg = {
        "agent": {"type": cli, "step_limit": 10, "instance_template": "{{task}}", **agent},
        "environment": {"environment_class": "local", "timeout": 60},
        "model": {
            "model_name": "scripted-model", "protocol": protocol,
            "model_kwargs": {"base_url": "${MIMO_TEST_BASE_URL}", "api_key": "${MIMO_TEST_API_KEY}"},
            "retry": {"max_attempts": 1, "timeout": 60},
            "pricing": {"input": 1.0, "output": 2.0},
        },
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path
