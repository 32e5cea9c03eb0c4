"""agent_msgs/ step files hold deltas, yet every call's request is rebuilt exactly: byte for byte what
the scripted server received, on every protocol; and a step's file does not grow with the history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mimo_core.agent_msgs import AgentMsgsError, StepWriter, encode_body, iter_steps, read_step, steps
from mimo_core.results import ResultsStore
from mimo_core.testing.scripted_llm import Reply, call, turns
from mimo_core.testing.tasks import write_config, write_tasks
from tests.core.conftest import run_cli

BIG = "x" * 30_000  # the first tool output: every later request carries it, no later step file should


def _script() -> object:
    return turns(
        Reply(tool_calls=[("bash", {"command": "cat big.txt"})], reasoning="look first"),
        call("bash", command="echo one"),
        Reply(content="thinking aloud", tool_calls=[("bash", {"command": "echo two"}),
                                                     ("bash", {"command": "echo three"})]),
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

    files = {n: json.loads((msgs / f"step_{n:04d}.json").read_text()) for n in range(1, 6)}
    assert "request" in files[1] and all("request" not in files[n] for n in range(2, 6))
    assert [files[n]["prev"] for n in range(2, 6)] == [1, 2, 3, 4]
    for n in range(3, 6):  # the big output went out in request 2; later files carry only what is new
        assert len(sent[n - 1]) > 10_000  # the tool keeps ~10 KB of the output
        assert (msgs / f"step_{n:04d}.json").stat().st_size < 3_000


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
    assert json.loads((tmp_path / "step_0002.json").read_text())["request_delta"] == {
        "lists": {"messages": {"keep": 2, "append": [m[2]]}}}


def test_a_rebuild_that_differs_from_what_was_sent_is_an_error(tmp_path: Path) -> None:
    writer = StepWriter(tmp_path)
    first = {"model": "m", "messages": [{"role": "user", "content": "u"}]}
    second = {"model": "m", "messages": [*first["messages"], {"role": "assistant", "content": "a"}]}
    writer.record(1, first, {})
    writer.record(2, second, {})
    path = tmp_path / "step_0001.json"
    path.write_text(path.read_text().replace('"u"', '"tampered"'))
    with pytest.raises(AgentMsgsError, match="step_0002.json: rebuilt request does not match"):
        read_step(tmp_path, 2)
    (tmp_path / "step_0001.json").unlink()
    with pytest.raises(AgentMsgsError, match="step_0001.json: cannot read"):
        read_step(tmp_path, 2)


def test_files_of_the_old_format_are_still_read(tmp_path: Path) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "u"}]}
    (tmp_path / "step_0001.json").write_text(json.dumps({"step": 1, "request": body, "response": {"id": "r"}}))
    [record] = iter_steps(tmp_path)
    assert (record.request, record.response, record.request_bytes) == (body, {"id": "r"}, encode_body(body).encode())


def test_reordered_keys_and_retyped_values_are_recorded_as_changes(tmp_path: Path) -> None:
    """Equal under `==` is not enough: codex sends the same metadata with its keys in another order."""
    first = {"model": "m", "meta": {"a": 1, "b": 2}, "input": [{"x": 1, "y": 2}], "n": 1}
    second = {"model": "m", "meta": {"b": 2, "a": 1}, "input": [{"y": 2, "x": 1}, {"z": 3}], "n": True}
    writer = StepWriter(tmp_path)
    writer.record(1, first, {})
    writer.record(2, second, {})
    assert [encode_body(s.request) for s in iter_steps(tmp_path)] == [encode_body(first), encode_body(second)]
