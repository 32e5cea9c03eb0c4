"""Fixtures for the Dagster graph: a fresh DAGSTER_HOME and output root per test, real CLI runs against
the scripted LLM, and a model that passes under config `good` and fails under config `bad`."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import DagsterInstance

from mimo_assets.cli_recording.address import IDLE_ENV
from mimo_assets.instance.home import POSTGRES_URL_ENV
from mimo_assets.partitions import dataset_name, partition_key
from testkit.postgres import PostgresServer, postgres_server
from testkit.scripted_llm import Reply, Request, ScriptedLLM, call
from tests.core.conftest import REPO, SECRET
from tests.host_needs import unavailable

EDIT = call("edit", path="greeting.txt", old_string="hello", new_string="goodbye")


def pk(data: Path, instance_id: str, config: str) -> str:
    """The partition key of an instance of the dataset file `data` under a config."""
    return str(partition_key(dataset_name(str(data)), instance_id, config))


def good_or_bad(req: Request) -> Reply:
    """Model `good` edits then submits (passes); any other model submits at once (fails)."""
    n = req.n_assistant_turns
    if req.body.get("model") == "good" and n == 0:
        return EDIT
    return call("submit")


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the session (a database per test keeps tests independent)."""
    try:
        with postgres_server() as server:
            yield server
    except FileNotFoundError as e:
        unavailable(str(e))


def private_dagster_env(
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    postgres_url: str | None = None,
) -> dict[str, str]:
    """A private instance and output root under `folder`, set in this process's environment; the environment
    a CLI subprocess gets too. SQLite, or the PostgreSQL database `postgres_url`."""
    env = {
        "DAGSTER_HOME": str(folder / "dagster_home"),
        "MIMOAGENT_OUTPUT_ROOT": str(folder / "store"),
        "MIMOAGENT_DAGSTER_WAIT": "all",  # a CLI run returns once recorded: the tests read the instance next
        IDLE_ENV: "0",
    }  # each run's recorder exits once it is recorded (test_warm_recorder.py keeps one warm)
    if postgres_url:
        env[POSTGRES_URL_ENV] = postgres_url
    else:
        monkeypatch.delenv(POSTGRES_URL_ENV, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    from mimo_assets.instance.home import dagster_home

    dagster_home()  # created as a new user's would be, with its dagster.yaml
    if POSTGRES_URL_ENV in env:
        env[POSTGRES_URL_ENV] = os.environ[POSTGRES_URL_ENV]  # with the driver dagster_home() named
    return env


@pytest.fixture
def dagster_env(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A private instance and output root (private_dagster_env). SQLite unless parametrized `indirect` with
    "postgres": then a new database on the session's PostgreSQL server."""
    url = None
    if getattr(request, "param", "sqlite") == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres")
        url = server.create_database(f"dagster_{uuid.uuid4().hex[:12]}")
    return private_dagster_env(tmp_path, monkeypatch, url)


@pytest.fixture
def instance(dagster_env, llm, monkeypatch: pytest.MonkeyPatch) -> DagsterInstance:
    """The private instance, opened as every mimoagent process opens it, for in-process runs against `llm`."""
    monkeypatch.setenv("MIMO_TEST_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("MIMO_TEST_API_KEY", "k")
    from mimo_assets.instance.home import get_instance

    return get_instance()


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM(good_or_bad) as server:
        yield server


def run_cli(
    args: list[str],
    server: ScriptedLLM,
    env: dict[str, str],
    timeout: float = 180,
    ingest: bool = True,
) -> subprocess.CompletedProcess:
    """A real CLI run; then, unless `ingest=False`, what the next `mimoagent-dagster` start does: record
    the finished CLI runs into Dagster (in this process, whose environment is `env`'s)."""
    full = {**os.environ, **env, "MIMO_TEST_BASE_URL": server.openai_base_url, "MIMO_TEST_API_KEY": SECRET}
    full.pop("MIMOAGENT_OBSERVERS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "mimo_core.cli", *args],
        cwd=REPO,
        env=full,
        text=True,
        capture_output=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    if ingest:
        ingest_finished_runs()
    return proc


def ingest_finished_runs() -> list[str]:
    """Record every finished CLI run of this process's Dagster home; each must record."""
    from mimo_assets.cli_recording.ingest import ingest_pending

    lines = ingest_pending(log=lambda line: None)
    assert all(line.endswith(": recorded") for line in lines), lines
    return lines
