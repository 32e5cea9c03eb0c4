"""`mimoagent-dagster` starts Dagster from its own venv, wherever it is called from, on either storage."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.core.conftest import REPO

EXE = REPO / ".venv" / "bin" / "mimoagent-dagster"


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """By absolute path, from another folder, with a PATH that does not contain the venv."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    return subprocess.run([str(EXE), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_called_by_absolute_path_without_the_venv_on_path_runs_dagster(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    tools = {"webserver": "dagster_webserver", "daemon": "dagster._daemon run", "dev": "dagster dev"}
    assert _run(tmp_path, "webserver", "--help").returncode == 0  # creates the home, once
    with ThreadPoolExecutor(len(tools)) as pool:  # independent processes: at once, not one after another
        procs = dict(zip(tools, pool.map(lambda tool: _run(tmp_path, tool, "--help"), tools), strict=True))
    for tool, usage in tools.items():
        assert procs[tool].returncode == 0, procs[tool].stderr
        assert usage in procs[tool].stdout, procs[tool].stdout
    home = tmp_path / "home" / ".mimoagent" / "dagster_home"
    assert "ConsolidatedSqliteEventLogStorage" in (home / "dagster.yaml").read_text()


def test_postgres_flag_creates_a_postgres_home_without_writing_the_url(tmp_path: Path) -> None:
    proc = _run(tmp_path, "--postgres", "postgresql://user:s3cret@127.0.0.1:1/db", "webserver", "--help")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "home" / ".mimoagent" / "dagster_home_postgres" / "dagster.yaml").read_text()
    assert "env: MIMOAGENT_DAGSTER_POSTGRES_URL" in text and "s3cret" not in text


def test_postgres_url_on_a_sqlite_home_is_a_one_line_error(tmp_path: Path) -> None:
    assert _run(tmp_path, "webserver", "--help").returncode == 0
    home = tmp_path / "home" / ".mimoagent" / "dagster_home"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "DAGSTER_HOME": str(home),
        "MIMOAGENT_DAGSTER_POSTGRES_URL": "postgresql://u@127.0.0.1:1/db",
    }
    proc = subprocess.run([str(EXE), "webserver", "--help"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "created for SQLite" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_a_new_home_gets_its_tables_under_the_lock_before_dagster_starts(tmp_path: Path) -> None:
    """The webserver on a brand-new home must not race a CLI run's recorder creating its tables: the
    command creates them itself, under the home's lock, before it execs Dagster."""
    import socket
    import time

    home = tmp_path / "dagster_home"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "DAGSTER_HOME": str(home)}
    proc = subprocess.Popen(
        [str(EXE), "webserver", "-h", "127.0.0.1", "-p", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        while not (home / ".mimoagent-schema-ready").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (home / ".mimoagent-schema-ready").exists(), proc.stderr.read() if proc.poll() is not None else ""
        assert (home / "history" / "runs.db").exists() or any(home.rglob("*.db"))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
