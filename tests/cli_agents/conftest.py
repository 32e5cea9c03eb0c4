"""Fixtures for the blackbox CLI agents: real installs from the registries into a cache shared by the
test session (MIMOAGENT_CACHE_DIR), configs pointing a CLI at the scripted server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.host_needs import need

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("MIMOAGENT_TEST_CLI_CACHE") or Path.home() / ".cache" / "mimoagent-tests")


def needs_npm() -> None:
    need("npm", "needed to install CLI agents from the npm registry")


@pytest.fixture(autouse=True)
def cli_cache(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Installs are slow (hundreds of MB): one cache per machine, reused across test runs."""
    monkeypatch.setenv("MIMOAGENT_CACHE_DIR", str(CACHE))
    return CACHE


def run_cli_rollout(
    folder: Path,
    server,
    cli: str,
    protocol: str,
    environment: dict | None = None,
    exit_code: int | None = 0,
    row: dict | None = None,
    **agent: object,
):
    """One rollout of `cli` on the greeting task through the real `mimoagent` command: (record, folder, traj)."""
    from mimo_core.records.results import ResultsStore
    from mimo_core.records.trajectory import read_trajectory
    from testkit.tasks import write_tasks
    from tests.core.conftest import run_cli

    needs_npm()
    data = write_tasks(folder)
    if row:  # fields merged into every row (an image for the docker backend, ...)
        rows = [json.loads(line) | row for line in data.read_text().splitlines()]
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = write_cli_config(folder, cli.replace("-", "_"), cli, protocol, environment=environment, **agent)
    out = folder / "out"
    proc = run_cli(
        ["-c", str(cfg), "--dataset", str(data), "-o", str(out)],
        server,
        "anthropic" if protocol in ("anthropic", "gemini") else protocol,
        timeout=900,
    )
    assert exit_code is None or proc.returncode == exit_code, proc.stderr
    [record] = ResultsStore(out).load().values()
    rollout = out / record.output_dir
    traj = read_trajectory(rollout / "traj.json")
    return record, rollout, traj


def scripted_in_workdir(*steps) -> object:
    """A responder whose turn n is `steps[n](workdir)`: CLIs whose tools want absolute paths get the
    rollout's working folder, read from the request (every CLI tells its model where it works)."""
    from testkit.scripted_llm import Request

    def responder(req: Request):
        found = re.search(r"(/[^\s\"'<>]*?/mimo-[^/\s\"'<>]+/work)", json.dumps(req.body))
        work = found.group(1) if found else "."
        return steps[min(req.n_assistant_turns, len(steps) - 1)](work)

    return responder


def recorded_calls(rollout: Path, server) -> list:
    """agent_msgs/ read back: one step per request the server saw, each rebuilt byte for byte."""
    from mimo_core.records.model_calls import iter_steps

    calls = list(iter_steps(rollout / "agent_msgs"))
    assert [c.request for c in calls] == [json.loads(r.raw) for r in server.requests]
    return calls


def leaked_files(folder: Path, secret: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and secret in p.read_text(errors="replace")]


def write_cli_config(
    folder: Path, name: str, cli: str, protocol: str, environment: dict | None = None, **agent: object
) -> Path:
    cfg = {
        "agent": {"type": cli, "step_limit": 10, "instance_template": "{{task}}", **agent},
        "environment": {"environment_class": "local", "timeout": 60, **(environment or {})},
        "model": {
            "model_name": "scripted-model",
            "protocol": protocol,
            "model_kwargs": {"base_url": "${MIMO_TEST_BASE_URL}", "api_key": "${MIMO_TEST_API_KEY}"},
            "retry": {"max_attempts": 1, "timeout": 60},
            "pricing": {"input": 1.0, "output": 2.0},
        },
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


DEAD_REGISTRY = "http://127.0.0.1:9/"  # nothing listens on the discard port: any registry access fails


@pytest.fixture(scope="session")
def claude_payload() -> Path:
    """Built once per machine through the command users run (kept in the test cache)."""
    from mimo_core.agents.blackbox import spec_for
    from mimo_core.agents.blackbox.payload import _leading_manifest, archive_name

    needs_npm()
    spec = spec_for("claude-code")
    assert spec is not None
    out = CACHE / "payloads"
    target = out / archive_name(spec, spec.default_version)
    if not target.exists() or _leading_manifest(target) is None:  # absent, or built before the manifest led
        proc = subprocess.run(
            [sys.executable, "-m", "mimo_core.cli", "payload", "build", "--cli", "claude-code", "-o", str(out)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=1800,
            env={**os.environ, "MIMOAGENT_CACHE_DIR": str(CACHE)},
        )
        assert proc.returncode == 0, proc.stderr
        assert str(target) in proc.stdout
    return target
