"""agent_msgs/steps.jsonl holds deltas, yet every call's request is rebuilt exactly: byte for byte what
the scripted server received, on every protocol; a call's line does not grow with the history; a torn
last line (a killed writer) loses only itself; folders of the earlier per-call-file formats still read."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from mimo_core.records.model_calls import AgentMsgsError, StepWriter, encode_body, iter_steps, read_step, steps
from mimo_core.records.results import ResultsStore
from testkit.scripted_llm import Reply, call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import run_cli

BIG = "x" * 30_000  # the first tool output: every later request carries it, no later line should


def _script() -> object:
    return turns(
        Reply(tool_calls=[("bash", {"command": "cat big.txt"})], reasoning="look first"),
        call("bash", command="echo one"),
        Reply(
            content="thinking aloud",
            tool_calls=[("bash", {"command": "echo two"}), ("bash", {"command": "echo three"})],
        ),
        call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"),
        call("submit"),
    )


@pytest.mark.parametrize("protocol", ["chat", "responses", "anthropic"])
def test_rebuilt_requests_equal_the_bytes_the_server_received(protocol: str, workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(_script())
    data = write_tasks(workdir)
    (workdir / "repo" / "big.txt").write_text(BIG)
    cfg = write_config(workdir, f"cfg_{protocol}", protocol=protocol)
    out = workdir / "out"
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm, protocol)
    assert proc.returncode == 0, proc.stderr
    [record] = ResultsStore(out).load().values()
    msgs = out / record.output_dir / "agent_msgs"
    sent = [r.raw for r in scripted_llm.requests]
    assert len(sent) == 5 and steps(msgs) == [1, 2, 3, 4, 5]

    rebuilt = [s.request_bytes for s in iter_steps(msgs)]
    assert rebuilt == sent
    assert [read_step(msgs, n).request_bytes for n in (5, 2, 1)] == [sent[4], sent[1], sent[0]]
    assert read_step(msgs, 5).request == json.loads(sent[4])
    assert read_step(msgs, 4).response["id"]

    assert [p.name for p in msgs.iterdir()] == ["steps.jsonl"]
    lines = (msgs / "steps.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5]
    assert "request" in records[0] and all("request" not in r for r in records[1:])
    assert [r["prev"] for r in records[1:]] == [1, 2, 3, 4]
    for n in range(3, 6):  # the big output went out in request 2; later lines carry only what is new
        assert len(sent[n - 1]) > 10_000  # the tool keeps ~10 KB of the output
        assert len(lines[n - 1]) < 3_000


def test_changed_trimmed_and_dropped_fields_round_trip(tmp_path: Path) -> None:
    m = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]
    bodies = [
        {"model": "m", "messages": m[:2], "tools": [{"name": "bash"}], "temperature": 0.7},
        {"model": "m", "messages": m, "tools": [{"name": "bash"}], "temperature": 0.7},
        {"model": "m", "messages": [m[0], {"role": "user", "content": "trimmed ✓"}], "tools": [], "top_p": 1e-3},
        {"messages": [m[0]], "model": "m2", "temperature": -0.0, "extra": {"nested": [1, 2.5, None]}},
        {"model": "m2", "messages": [m[0]] * 3},
    ]
    writer = StepWriter(tmp_path)
    for n, body in enumerate(bodies, 1):
        writer.record(n, body, {"n": n}, encode_body(body))
    writer.record(5, bodies[4], {"n": "again"})  # a step written twice: the chain restarts, nothing is lost
    assert [s.request_bytes for s in iter_steps(tmp_path)] == [encode_body(b).encode() for b in bodies]
    assert [read_step(tmp_path, n).request for n in range(1, 6)] == bodies
    assert list(read_step(tmp_path, 4).request) == ["messages", "model", "temperature", "extra"]
    assert read_step(tmp_path, 5).response == {"n": "again"}
    assert steps(tmp_path) == [1, 2, 3, 4, 5]
    second = json.loads((tmp_path / "steps.jsonl").read_text().splitlines()[1])
    assert second["request_delta"] == {"lists": {"messages": {"keep": 2, "append": [m[2]]}}}


def test_calls_recorded_out_of_order_read_back_in_step_order(tmp_path: Path) -> None:
    """A CLI agent's proxy may hand over call 3 before call 2 (two requests in flight)."""
    bodies = {n: {"model": "m", "messages": [{"role": "user", "content": "u"}] * n} for n in range(1, 5)}
    writer = StepWriter(tmp_path)
    for n in (1, 3, 2, 4):
        writer.record(n, bodies[n], {"n": n})
    assert [(s.step, s.request, s.response) for s in iter_steps(tmp_path)] == [
        (n, bodies[n], {"n": n}) for n in range(1, 5)
    ]
    assert read_step(tmp_path, 4).request == bodies[4]


def test_a_rebuild_that_differs_from_what_was_sent_is_an_error(tmp_path: Path) -> None:
    writer = StepWriter(tmp_path)
    first = {"model": "m", "messages": [{"role": "user", "content": "u"}]}
    second = {"model": "m", "messages": [*first["messages"], {"role": "assistant", "content": "a"}]}
    writer.record(1, first, {})
    writer.record(2, second, {})
    path = tmp_path / "steps.jsonl"
    good = path.read_text()
    path.write_text(good.replace('"u"', '"tampered"'))
    with pytest.raises(AgentMsgsError, match="steps.jsonl:2: rebuilt request does not match"):
        read_step(tmp_path, 2)
    path.write_text("{not json\n" + good)
    with pytest.raises(AgentMsgsError, match="steps.jsonl:1: not a JSON record"):
        list(iter_steps(tmp_path))
    path.write_text('{"step": 1, "response": {}}\n' + good.splitlines()[1] + "\n")  # neither request nor prev
    with pytest.raises(AgentMsgsError, match="steps.jsonl:1: step 1 is neither a whole request nor a delta"):
        list(iter_steps(tmp_path))
    path.write_text('["not", "a", "record"]\n')
    with pytest.raises(AgentMsgsError, match="steps.jsonl:1: not a step record"):
        list(iter_steps(tmp_path))
    path.write_text(good.splitlines()[1] + "\n")  # the whole request's line lost
    with pytest.raises(AgentMsgsError, match="steps.jsonl:1: step 2 is neither a whole request nor a delta"):
        read_step(tmp_path, 2)
    path.unlink()
    with pytest.raises(AgentMsgsError, match="steps.jsonl: cannot read"):
        read_step(tmp_path, 2)


def test_a_torn_last_line_loses_only_itself(tmp_path: Path) -> None:
    """A writer killed mid-line leaves half a line: readers skip it, and a new writer cuts it off before
    appending, so its own lines are not glued to it."""
    bodies = [{"model": "m", "messages": [{"role": "user", "content": "u"}] * n} for n in range(1, 4)]
    writer = StepWriter(tmp_path)
    writer.record(1, bodies[0], {})
    writer.record(2, bodies[1], {})
    path = tmp_path / "steps.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"step":3,"prev":2,"request_de')
    assert [s.request for s in iter_steps(tmp_path)] == bodies[:2]
    StepWriter(tmp_path).record(3, bodies[2], {"after": "restart"})
    assert path.read_bytes().startswith(whole) and path.read_bytes().count(b"\n") == 3
    assert [s.request for s in iter_steps(tmp_path)] == bodies
    assert read_step(tmp_path, 3).response == {"after": "restart"}


def test_a_torn_line_longer_than_a_read_chunk_is_cut_at_the_last_whole_line(tmp_path: Path) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "u"}]}
    StepWriter(tmp_path).record(1, body, {})
    path = tmp_path / "steps.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"step":2,"request":{"messages":[{"content":"' + b"x" * 3_000_000)
    StepWriter(tmp_path).record(2, body, {"n": 2})
    assert path.read_bytes().startswith(whole) and path.read_bytes().count(b"\n") == 2
    assert [s.response for s in iter_steps(tmp_path)] == [{}, {"n": 2}]


def test_folders_of_the_earlier_formats_are_still_read(tmp_path: Path) -> None:
    """One file per call: whole requests without a hash (the first format), then deltas with one."""
    body = {"model": "m", "messages": [{"role": "user", "content": "u"}]}
    (tmp_path / "step_0001.json").write_text(json.dumps({"step": 1, "request": body, "response": {"id": "r"}}))
    [record] = iter_steps(tmp_path)
    assert (record.request, record.response, record.request_bytes) == (body, {"id": "r"}, encode_body(body).encode())

    second = {"model": "m", "messages": [*body["messages"], {"role": "assistant", "content": "a"}]}
    appended = {"messages": {"keep": 1, "append": [second["messages"][1]]}}
    delta = {
        "step": 2,
        "prev": 1,
        "request_delta": {"lists": appended},
        "request_sha1": hashlib.sha1(encode_body(second).encode()).hexdigest(),
        "response": {"id": "r2"},
    }
    (tmp_path / "step_0002.json").write_text(json.dumps(delta))
    assert steps(tmp_path) == [1, 2] and read_step(tmp_path, 2).request == second
    assert [s.request_bytes for s in iter_steps(tmp_path)] == [encode_body(body).encode(), encode_body(second).encode()]


def test_reordered_keys_and_retyped_values_are_recorded_as_changes(tmp_path: Path) -> None:
    """Equal under `==` is not enough: codex sends the same metadata with its keys in another order."""
    first = {"model": "m", "meta": {"a": 1, "b": 2}, "input": [{"x": 1, "y": 2}], "n": 1}
    second = {"model": "m", "meta": {"b": 2, "a": 1}, "input": [{"y": 2, "x": 1}, {"z": 3}], "n": True}
    writer = StepWriter(tmp_path)
    writer.record(1, first, {})
    writer.record(2, second, {})
    assert [encode_body(s.request) for s in iter_steps(tmp_path)] == [encode_body(first), encode_body(second)]


def test_a_rollout_stopped_before_its_first_call_reads_back_as_no_steps(tmp_path: Path) -> None:
    """A run stopped (SIGTERM) while a rollout set up leaves an attempt that made no call: its steps file
    is there, empty, and reads back as 0 steps (not as a folder that cannot be read)."""
    StepWriter(tmp_path)
    assert (tmp_path / "steps.jsonl").read_text() == "" and list(iter_steps(tmp_path)) == []
