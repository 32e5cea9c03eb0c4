"""Dagster off the CLI's critical path: a CLI run leaves only a registry entry and nothing running; Dagster
records it afterwards (the daemon's sensor, or the next `mimoagent-dagster` command), once, with the
partitions, lineage and run a live recording gives."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from dagster import AssetKey, DagsterInstance, DagsterRunStatus, build_sensor_context

from mimo_assets.cli_recording import registry
from mimo_assets.instance.home import get_instance
from mimo_assets.sensors import cli_runs_to_record
from testkit.processes import stop_group
from testkit.tasks import write_named_config, write_tasks
from tests.core.conftest import REPO, SECRET
from tests.dagster.conftest import ingest_finished_runs, pk, run_cli

EXE = REPO / ".venv" / "bin" / "mimoagent-dagster"
GRADED = AssetKey("graded_results")


def _processes_of_home(home: Path) -> list[int]:
    """Live processes whose environment names this Dagster home (anything a CLI run left behind)."""
    mark = f"DAGSTER_HOME={home}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if (
                mark in (proc / "environ").read_bytes().split(b"\0")
                and (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
            ):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def _entries(home: Path) -> list[Path]:
    return sorted(registry.registry(home).glob("*.json"))


def test_a_cli_run_leaves_an_entry_and_nothing_running_and_the_next_command_records_it(
    tmp_path: Path,
    dagster_env,
    llm,
) -> None:
    home = Path(dagster_env["DAGSTER_HOME"])
    data = write_tasks(tmp_path, 4)
    good, bad = write_named_config(tmp_path, "good"), write_named_config(tmp_path, "bad")
    run_cli(
        ["-c", str(good), "-c", str(bad), "--dataset", str(data), "-o", str(tmp_path / "out"), "--workers", "4"],
        llm,
        dagster_env,
        ingest=False,
    )
    assert _processes_of_home(home) == []  # no recorder, no child: the CLI's whole tree is gone
    [entry] = _entries(home)
    assert registry.state(entry, registry.read_entry(entry)) == "ended"
    instance = get_instance()
    assert instance.get_runs() == []  # nothing in Dagster yet: the CLI never touched it

    proc = subprocess.run(
        [str(EXE), "ingest"],
        cwd=tmp_path,
        env={**os.environ, **dagster_env},
        text=True,
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == 0 and "recorded" in proc.stderr, proc.stderr
    assert _entries(home) == []
    [run] = instance.get_runs()
    assert run.job_name == "cli_run" and run.status == DagsterRunStatus.SUCCESS
    assert run.tags["mimoagent/source"] == "cli" and run.tags["mimoagent/ab"] == "random"
    planned = set(instance.get_dynamic_partitions("rollout"))
    assert instance.get_materialized_partitions(GRADED) == planned and len(planned) == 4
    mat = instance.fetch_materializations(GRADED, limit=1).records[0].asset_materialization
    assert mat.tags["dagster/input_event_pointer/rollouts"] != "NULL"  # lineage as a live recording gives it
    again = subprocess.run(
        [str(EXE), "ingest"],
        cwd=tmp_path,
        env={**os.environ, **dagster_env},
        text=True,
        capture_output=True,
        timeout=300,
    )
    assert again.returncode == 0 and len(instance.get_runs()) == 1  # nothing recorded twice


def test_the_daemon_records_a_finished_cli_run_by_itself(tmp_path: Path, dagster_env, llm) -> None:
    home = Path(dagster_env["DAGSTER_HOME"])
    data, good = write_tasks(tmp_path, 2), write_named_config(tmp_path, "good")
    get_instance().dispose()  # the home's tables, under its lock, before the daemon opens it too
    log = tmp_path / "daemon.log"
    env = {**os.environ, **dagster_env, "MIMO_TEST_BASE_URL": llm.openai_base_url, "MIMO_TEST_API_KEY": SECRET}
    with open(log, "w") as out:
        daemon = subprocess.Popen(
            [str(EXE), "daemon"], cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        run_cli(["-c", str(good), "--dataset", str(data), "-o", str(tmp_path / "out")], llm, dagster_env, ingest=False)
        ended = time.monotonic()
        instance = get_instance()
        deadline = ended + 300  # generous on a loaded machine; bench/bench_dagster.py measures the delay
        while time.monotonic() < deadline:
            runs = [r for r in instance.get_runs() if r.job_name == "cli_run"]
            if runs and runs[0].status == DagsterRunStatus.SUCCESS:
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"the daemon did not record the CLI run; its log:\n{log.read_text()[-3000:]}")
        print(f"recorded {time.monotonic() - ended:.1f} s after the CLI exited")
        assert instance.get_materialized_partitions(GRADED) == {pk(data, f"greet-{i}", "good") for i in range(2)}
        assert _entries(home) == []
        assert runs[0].tags["dagster/sensor_name"] == "cli_runs_to_record"
    finally:
        os.killpg(daemon.pid, signal.SIGKILL)  # the daemon and the run processes it launched
        daemon.wait()


def test_an_entry_being_recorded_is_left_alone_and_a_repeat_records_nothing_twice(
    tmp_path: Path,
    dagster_env,
    llm,
) -> None:
    home = Path(dagster_env["DAGSTER_HOME"])
    data, good = write_tasks(tmp_path, 2), write_named_config(tmp_path, "good")
    run_cli(["-c", str(good), "--dataset", str(data), "-o", str(tmp_path / "out")], llm, dagster_env, ingest=False)
    [entry] = _entries(home)
    instance = get_instance()
    with registry.claimed(entry) as held:  # as the live recorder or another ingestion holds it
        assert held is not None
        assert ingest_finished_runs() == []
        assert _sensor_requests(instance) == []
    [request] = _sensor_requests(instance)
    assert request.run_key == f"cli-{held.header.request.run_id}"
    assert request.run_config["ops"]["record_cli_run"]["config"]["entry"] == str(entry)
    saved = tmp_path / "entry-copy"
    shutil.copy(entry, saved)
    shutil.copy(registry.ended_path(entry), saved.with_suffix(".ended"))
    assert len(ingest_finished_runs()) == 1
    shutil.copy(saved, entry)  # as if a recording died after storing its events, before removing its entry
    shutil.copy(saved.with_suffix(".ended"), registry.ended_path(entry))
    assert len(ingest_finished_runs()) == 1
    assert len(instance.fetch_materializations(GRADED, limit=100).records) == 2  # each partition once


def test_a_running_cli_run_is_not_recorded_until_it_ends(tmp_path: Path, dagster_env) -> None:
    """An entry whose process is alive is running; once it ends (or dies) it is ready."""
    from mimo_assets.cli_recording.feed import RecordingHeader
    from mimo_core.run.plan import RunRequest

    home = Path(dagster_env["DAGSTER_HOME"])
    request = RunRequest(dataset="d.jsonl", configs=["c.yaml"], output_dir=tmp_path / "out", run_id="alive")
    header = RecordingHeader(request=request, config_names=["c"], instance_ids=["i"], planned=[("i", "c", 0)])
    code = (
        f"import sys; from pathlib import Path; from mimo_assets.cli_recording.registry import write_entry; "
        f"from mimo_assets.cli_recording.feed import RecordingHeader; "
        f"write_entry(Path({str(home)!r}), RecordingHeader.model_validate_json(sys.stdin.read()))"
    )
    writer = subprocess.run(
        [sys.executable, "-c", code],
        input=header.model_dump_json(),
        text=True,
        cwd=REPO,
        capture_output=True,
        timeout=60,
    )
    assert writer.returncode == 0, writer.stderr
    [entry] = _entries(home)
    assert registry.state(entry, registry.read_entry(entry)) == "killed"  # the writer exited without ending
    mine = registry.write_entry(
        home, header.model_copy(update={"request": request.model_copy(update={"run_id": "mine"})})
    )
    assert registry.state(mine, registry.read_entry(mine)) == "running"  # this process is alive
    assert [p for p, _ in registry.ready(home)] == [entry]
    registry.mark_ended(mine)
    assert sorted(p for p, _ in registry.ready(home)) == sorted([entry, mine])


def _sensor_requests(instance: DagsterInstance) -> list:
    result = cli_runs_to_record(build_sensor_context(instance=instance))
    return list(getattr(result, "run_requests", None) or [])


def test_the_webserver_start_records_finished_cli_runs(tmp_path: Path, dagster_env, llm) -> None:
    import socket
    import urllib.request

    home = Path(dagster_env["DAGSTER_HOME"])
    data, good = write_tasks(tmp_path, 1), write_named_config(tmp_path, "good")
    run_cli(["-c", str(good), "--dataset", str(data), "-o", str(tmp_path / "out")], llm, dagster_env, ingest=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with open(tmp_path / "webserver.log", "w") as out:
        proc = subprocess.Popen(
            [str(EXE), "webserver", "-h", "127.0.0.1", "-p", str(port)],
            cwd=tmp_path,
            env={**os.environ, **dagster_env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            raise AssertionError((tmp_path / "webserver.log").read_text()[-3000:])
        instance = get_instance()  # recorded before the webserver served anything
        assert instance.get_materialized_partitions(GRADED) == {pk(data, "greet-0", "good")}
        assert _entries(home) == []
        assert "recording 1 finished CLI run(s) into Dagster" in (tmp_path / "webserver.log").read_text()
    finally:
        stop_group(proc, timeout=30)


def test_a_recording_registers_the_inputs_the_cli_run_held_without_reading_them_again(
    tmp_path: Path, dagster_env, llm
) -> None:
    """The entry records the run's dataset (its version and rows) and config files (path, hash); the recording
    registers those: the dataset file gone and the config edited after the run change nothing recorded."""
    from mimo_assets.asset_keys import CONFIG_FILES, CONVERTED_JSONL
    from mimo_assets.input_versions import config_files, converted_text
    from mimo_core.datasets.loader import load_tasks

    home = Path(dagster_env["DAGSTER_HOME"])
    data, good = write_tasks(tmp_path, 3), write_named_config(tmp_path, "good")
    version, ran = converted_text(load_tasks(str(data)))[1], config_files([str(good)])
    run_cli(["-c", str(good), "--dataset", str(data), "-o", str(tmp_path / "one")], llm, dagster_env)
    instance = get_instance()
    assert (
        instance.fetch_materializations(CONVERTED_JSONL, limit=1)
        .records[0]
        .asset_materialization.tags["dagster/data_version"]
        == version
    )

    run_cli(["-c", str(good), "--dataset", str(data), "-o", str(tmp_path / "two")], llm, dagster_env, ingest=False)
    [entry] = _entries(home)
    header = registry.read_entry(entry).header
    assert header.dataset is not None and header.dataset.version == version and header.dataset.rows == 3
    assert header.config_files == ran
    data.unlink()  # a reload would fail: "dataset ... not recorded"
    good.write_text(good.read_text() + "# edited after the run\n")  # a reread would register a new hash
    ingest_finished_runs()
    runs = instance.get_runs()
    assert len(runs) == 2 and all(r.status == DagsterRunStatus.SUCCESS for r in runs)
    logs = "\n".join(e.message for r in runs for e in instance.all_logs(r.run_id) if e.message)
    assert "not recorded" not in logs and "changed since" not in logs
    configs = instance.fetch_materializations(CONFIG_FILES, limit=10).records
    assert len(configs) == 1  # registered by the first run, unchanged by the second
    assert configs[0].asset_materialization.metadata["hashes"].value == {"good": ran["good"].sha256}
    assert len(instance.fetch_materializations(CONVERTED_JSONL, limit=10).records) == 1


def test_an_entry_from_before_the_inputs_were_recorded_still_records_them(tmp_path: Path, dagster_env, llm) -> None:
    """A schema-1 entry names no dataset version nor config hashes: the recording loads and reads them."""
    import json

    from mimo_assets.asset_keys import CONFIG_FILES, CONVERTED_JSONL

    home = Path(dagster_env["DAGSTER_HOME"])
    data, good = write_tasks(tmp_path, 2), write_named_config(tmp_path, "good")
    run_cli(["-c", str(good), "--dataset", str(data), "-o", str(tmp_path / "out")], llm, dagster_env, ingest=False)
    [entry] = _entries(home)
    doc = json.loads(entry.read_text())
    for field in ("dataset", "config_files"):
        del doc["header"][field]
    entry.write_text(json.dumps(doc | {"schema_version": 1}))
    assert registry.read_entry(entry).header.dataset is None
    ingest_finished_runs()
    instance = get_instance()
    [run] = instance.get_runs()
    assert run.status == DagsterRunStatus.SUCCESS
    assert instance.fetch_materializations(CONVERTED_JSONL, limit=1).records
    configs = instance.fetch_materializations(CONFIG_FILES, limit=1).records[0].asset_materialization
    assert set(configs.metadata["hashes"].value) == {"good"}
