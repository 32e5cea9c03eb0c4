"""Live recording (MIMOAGENT_DAGSTER_LIVE=1): the recorder stays warm between CLI runs with the same settings,
records each of them, serves only callers holding the home's token, and exits when idle. Also: relative
paths of a CLI run are recorded where they point, whoever records it."""

from __future__ import annotations

import os
import re
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance

from mimo_assets.cli_recording import registry
from mimo_assets.cli_recording.address import IDLE_ENV, TOKEN_FILE, socket_address
from mimo_assets.cli_recording.observer import LOG_FILE, REGISTERED_LINE
from testkit.tasks import write_named_config, write_tasks
from tests.dagster.conftest import ingest_finished_runs, pk, run_cli

IDLE_S = 4.0


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _recorder_of(out: Path) -> tuple[int | None, int]:
    """(pid of the recorder this run started, or None when it used a warm one; pid that recorded it)."""
    text = (out / LOG_FILE).read_text()
    started = re.search(r"started recorder pid (\d+)", text)
    recorded = re.search(r"recorded by pid (\d+): ok", text)
    assert recorded, text
    return (int(started.group(1)) if started else None), int(recorded.group(1))


@pytest.fixture
def started_recorders() -> Iterator[list[int]]:
    """Recorders the test's CLI runs started: any still alive at the end are stopped."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGTERM)


def test_a_second_run_uses_the_warm_recorder_which_exits_when_idle(
    tmp_path: Path,
    dagster_env,
    llm,
    started_recorders: list[int],
) -> None:
    env = {**dagster_env, IDLE_ENV: str(IDLE_S), "MIMOAGENT_DAGSTER_LIVE": "1"}
    data = write_tasks(tmp_path, 2)
    cfg = write_named_config(tmp_path, "good")
    outs = [tmp_path / "first", tmp_path / "second", tmp_path / "other-settings"]
    run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(outs[0]), "--slice", "0:1"], llm, env, ingest=False)
    started, first_by = _recorder_of(outs[0])
    assert started is not None
    started_recorders.append(started)
    assert first_by != started  # a fork of the warm process recorded it; the recorder itself waits for more

    run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(outs[1]), "--slice", "1:2"], llm, env, ingest=False)
    again, second_by = _recorder_of(outs[1])
    assert again is None and second_by not in (started, first_by), (outs[1] / LOG_FILE).read_text()
    assert _alive(started)

    # Other recording settings never go to that recorder: this run starts its own.
    run_cli(
        ["-c", str(cfg), "--dataset", str(data), "-o", str(outs[2]), "--slice", "0:1"],
        llm,
        {**env, "MIMOAGENT_DAGSTER_NICE": "5"},
        ingest=False,
    )
    assert registry.ready(Path(dagster_env["DAGSTER_HOME"])) == []  # each recorder recorded its run and its entry
    other, _ = _recorder_of(outs[2])
    assert other is not None and other != started
    started_recorders.append(other)

    instance = DagsterInstance.from_config(dagster_env["DAGSTER_HOME"])
    assert [r.status.value for r in instance.get_runs()] == ["SUCCESS"] * 3
    assert instance.get_materialized_partitions(AssetKey("graded_results")) == {
        pk(data, "greet-0", "good"),
        pk(data, "greet-1", "good"),
    }

    deadline = time.monotonic() + IDLE_S + 10
    while time.monotonic() < deadline and (_alive(started) or _alive(other)):
        time.sleep(0.1)
    assert not _alive(started) and not _alive(other), "an idle recorder did not exit"
    log = (Path(dagster_env["DAGSTER_HOME"]) / "mimoagent-recorder.log").read_text()
    assert log.count("idle: exiting") == 2, log


def _recorder_address(pid: int) -> str:
    """The abstract socket a recorder listens on: its argv names it."""
    name = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[3].decode()
    return socket_address(name)


def test_the_recorder_serves_only_a_caller_holding_the_homes_token(
    tmp_path: Path,
    dagster_env,
    llm,
    started_recorders: list[int],
) -> None:
    env = {**dagster_env, IDLE_ENV: "60", "MIMOAGENT_DAGSTER_LIVE": "1"}
    data, cfg = write_tasks(tmp_path, 2), write_named_config(tmp_path, "good")
    run_cli(
        ["-c", str(cfg), "--dataset", str(data), "-o", str(tmp_path / "first"), "--slice", "0:1"],
        llm,
        env,
        ingest=False,
    )
    started, _ = _recorder_of(tmp_path / "first")
    assert started is not None
    started_recorders.append(started)
    home = Path(dagster_env["DAGSTER_HOME"])
    assert (home / TOKEN_FILE).stat().st_mode & 0o777 == 0o600
    header = "{}"  # any body: it must never be read
    for first_line in ("mimoagent-token " + "0" * 64, "", "not-a-token-line"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(60)
            sock.connect(_recorder_address(started))
            reader = sock.makefile("r")
            assert reader.readline().startswith("mimoagent-recorder ")
            sock.sendall(f"{first_line}\n{header}\n".encode())
            assert reader.readline().strip() == "error unauthorized", first_line
    instance = DagsterInstance.from_config(dagster_env["DAGSTER_HOME"])
    assert len(instance.get_runs()) == 1  # only the CLI run
    run_cli(
        ["-c", str(cfg), "--dataset", str(data), "-o", str(tmp_path / "second"), "--slice", "1:2"],
        llm,
        env,
        ingest=False,
    )  # the token's holder is still served, by the same warm recorder
    assert _recorder_of(tmp_path / "second")[0] is None and len(instance.get_runs()) == 2
    log = (home / "mimoagent-recorder.log").read_text()
    assert log.count("a connection without the home's token: refused") == 3


def test_relative_paths_of_the_cli_are_recorded_where_they_point(tmp_path: Path, dagster_env, llm) -> None:
    """The recorder does not share the CLI's working directory: the dataset, config and output folder
    named relative to it must still be recorded (the README's own demo command uses relative paths)."""
    import subprocess
    import sys

    from tests.core.conftest import REPO, SECRET

    work = tmp_path / "work"
    work.mkdir()
    data = write_tasks(work, 2)
    cfg = write_named_config(work, "good")
    env = {
        **os.environ,
        **dagster_env,
        "MIMO_TEST_BASE_URL": llm.openai_base_url,
        "MIMO_TEST_API_KEY": SECRET,
        "PYTHONPATH": str(REPO),
    }
    env.pop("MIMOAGENT_OBSERVERS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "mimo_core.cli", "-c", cfg.name, "--dataset", data.name, "-o", "out"],
        cwd=work,
        env=env,
        text=True,
        capture_output=True,
        timeout=180,
    )
    assert proc.returncode == 0 and "not recorded" not in proc.stderr, proc.stderr
    assert REGISTERED_LINE in (work / "out" / LOG_FILE).read_text()
    assert ingest_finished_runs()  # by a process with another working directory
    instance = DagsterInstance.from_config(dagster_env["DAGSTER_HOME"])
    assert instance.get_materialized_partitions(AssetKey("graded_results")) == {
        pk(data, "greet-0", "good"),
        pk(data, "greet-1", "good"),
    }
    rows = instance.get_latest_materialization_event(AssetKey("dataset_rows"))
    assert rows is not None, "the dataset named by a relative path was not recorded"
    event = instance.get_latest_materialization_event(AssetKey("graded_results"))
    assert event is not None and event.asset_materialization is not None
    assert event.asset_materialization.metadata["results_file"].value.startswith(str(work / "out"))
