"""results.jsonl lines and agent_msgs/steps.jsonl lines carry a schema_version, as traj.json does: the
lines of the forms written before it are still read, and a version this code does not know (a newer
mimoagent wrote it) is a clear error that never repairs, rewrites or skips the newer records."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mimo_core.errors import UnknownSchemaError
from mimo_core.records.model_calls import STEPS_SCHEMA_VERSION, AgentMsgsError, StepWriter, iter_steps, read_step
from mimo_core.records.results import RESULTS_SCHEMA_VERSION, ResultRecord, ResultsStore
from mimo_core.status import ExitStatus
from tests.core.conftest import REPO

FIXTURES = Path(__file__).parent / "fixtures"


def _rec(instance: str) -> ResultRecord:
    return ResultRecord(
        run_id="r",
        instance_id=instance,
        config_name="c",
        exit_status=ExitStatus.SUBMITTED,
        output_dir=f"{instance}/c/0",
    )


def _newer_line(instance: str) -> str:
    """A record as a later mimoagent might write it: a version this code does not know, and a new field."""
    return json.dumps(
        {
            **json.loads(_rec(instance).model_dump_json()),
            "schema_version": "9.0",
            "a_field_from_the_future": {"kept": True},
        }
    )


def test_a_results_line_carries_its_schema_version_first(tmp_path: Path) -> None:
    ResultsStore(tmp_path).put(_rec("a"))
    line = json.loads((tmp_path / "results.jsonl").read_text())
    assert next(iter(line)) == "schema_version" and line["schema_version"] == RESULTS_SCHEMA_VERSION == "1.0"


def test_results_lines_written_before_versions_read_as_1_0(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "results_unversioned.jsonl", tmp_path / "results.jsonl")
    assert all("schema_version" not in json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines())
    store = ResultsStore(tmp_path)
    records = store.load()
    assert set(records) == {("greet-0", "cfg", 0), ("greet-1", "cfg", 0)}
    ok, failed = records[("greet-0", "cfg", 0)], records[("greet-1", "cfg", 0)]
    assert ok.schema_version == "1.0" and (ok.exit_status, ok.reward, ok.input_fingerprint) == (
        ExitStatus.SUBMITTED,
        1.0,
        "abc123",
    )
    assert failed.infra_error and failed.error_class == ExitStatus.MODEL_ERROR
    assert store.repair() is None  # old lines are records, not torn ones
    store.put(_rec("new"))  # a new line appended beside the old ones
    assert set(ResultsStore(tmp_path).load()) == {*records, ("new", "c", 0)}


def test_a_results_line_of_an_unknown_version_stops_readers_and_writers_and_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    ResultsStore(tmp_path).put(_rec("a"))
    path.write_text(path.read_text() + _newer_line("b") + "\n")
    before = path.read_bytes()
    store = ResultsStore(tmp_path)
    for action in (store.load, store.repair, lambda: store.put(_rec("a"))):
        with pytest.raises(
            UnknownSchemaError,
            match=r"results.jsonl:2: results schema_version '9.0' was written "
            r"by a newer mimoagent \(this one reads 1.0\)",
        ):
            action()
    assert path.read_bytes() == before and list(tmp_path.glob("results.jsonl.torn-*")) == []


def test_a_run_into_a_folder_a_newer_mimoagent_wrote_exits_2_naming_the_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").write_text(_newer_line("demo-0") + "\n")
    before = (out / "results.jsonl").read_bytes()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mimo_core.cli",
            "-c",
            "configs/demo.yaml",
            "--dataset",
            "examples/demo.jsonl",
            "--recalc-input",
            "gt",
            "-o",
            str(out),
        ],
        cwd=REPO,
        text=True,
        capture_output=True,
        timeout=300,
        env={"MIMOAGENT_OBSERVERS": "0", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 2, proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if "error" in x]
    assert f"{out / 'results.jsonl'}:1: results schema_version '9.0'" in line
    assert (out / "results.jsonl").read_bytes() == before and "Traceback" not in proc.stderr


def test_a_steps_line_carries_its_schema_version(tmp_path: Path) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "u"}]}
    writer = StepWriter(tmp_path)
    writer.record(1, body, {})
    writer.record(2, {**body, "messages": body["messages"] * 2}, {})
    lines = [json.loads(x) for x in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert [next(iter(x)) for x in lines] == ["schema_version"] * 2
    assert {x["schema_version"] for x in lines} == {STEPS_SCHEMA_VERSION} == {"1.0"}


def test_steps_lines_written_before_versions_are_read(tmp_path: Path) -> None:
    msgs = tmp_path / "agent_msgs"
    shutil.copytree(FIXTURES / "agent_msgs_unversioned", msgs)
    assert all("schema_version" not in json.loads(x) for x in (msgs / "steps.jsonl").read_text().splitlines())
    calls = list(iter_steps(msgs))
    assert [c.step for c in calls] == [1, 2] and [c.response["id"] for c in calls] == ["r1", "r2"]
    assert [m["role"] for m in calls[1].request["messages"]] == ["system", "user", "assistant", "tool"]
    StepWriter(msgs).record(3, calls[1].request, {"id": "r3"})  # a resumed writer adds versioned lines
    assert [c.step for c in iter_steps(msgs)] == [1, 2, 3] and read_step(msgs, 3).response == {"id": "r3"}


def test_a_steps_line_of_an_unknown_version_is_an_error_naming_the_line(tmp_path: Path) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "u"}]}
    StepWriter(tmp_path).record(1, body, {})
    path = tmp_path / "steps.jsonl"
    newer = {"schema_version": "2.0", "step": 2, "request": body, "response": {}}
    path.write_text(path.read_text() + json.dumps(newer) + "\n")
    with pytest.raises(
        AgentMsgsError,
        match=r"steps.jsonl:2: agent_msgs schema_version '2.0' was written by a "
        r"newer mimoagent \(this one reads 1.0\)",
    ):
        list(iter_steps(tmp_path))
