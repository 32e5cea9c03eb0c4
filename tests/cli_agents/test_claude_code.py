"""claude-code end to end: installed pinned from npm, run headless against the scripted server speaking
streaming Anthropic Messages, edits the task's file with its own tools, graded Pass."""

from __future__ import annotations

import json
from pathlib import Path

from mimo_core.records.model_calls import iter_steps
from mimo_core.records.results import ResultsStore
from mimo_core.records.trajectory import read_trajectory
from testkit.scripted_llm import Reply, call, turns
from testkit.tasks import write_tasks
from tests.cli_agents.conftest import needs_npm, write_cli_config
from tests.core.conftest import SECRET, run_cli

READ_EDIT_DONE = turns(
    Reply(content="Let me look.", tool_calls=[("Read", {"file_path": "greeting.txt"})], reasoning="read first"),
    call("Edit", file_path="greeting.txt", old_string="hello", new_string="goodbye"),
    Reply(content="greeting.txt now says goodbye."),
)


def test_claude_code_edits_the_file_and_passes(tmp_path: Path, scripted_llm) -> None:
    needs_npm()
    scripted_llm.set_responder(READ_EDIT_DONE)
    data = write_tasks(tmp_path)
    cfg = write_cli_config(tmp_path, "claude", "claude-code", "anthropic")
    out = tmp_path / "out"
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm, "anthropic", timeout=900)
    assert proc.returncode == 0, proc.stderr
    [record] = ResultsStore(out).load().values()
    rollout = out / record.output_dir
    assert (record.exit_status, record.passed) == ("submitted", True), (rollout / "instance.log").read_text()
    assert record.agent_type == "claude-code" and record.steps == 3

    traj = read_trajectory(rollout / "traj.json")
    on_disk = json.loads((rollout / "traj.json").read_text())  # the documented OpenAI chat format
    roles = [m["role"] for m in on_disk["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    first = on_disk["messages"][2]
    assert first["reasoning_content"] == "read first" and first["content"] == "Let me look."
    assert first["tool_calls"][0]["function"]["name"] == "Read"
    assert json.loads(on_disk["messages"][4]["tool_calls"][0]["function"]["arguments"])["new_string"] == "goodbye"
    assert "hello" in on_disk["messages"][3]["content"] and on_disk["messages"][3]["name"] == "Read"
    assert {"Bash", "Edit", "Read"} <= {t["function"]["name"] for t in on_disk["tools"]}
    assert traj.usage.prompt_tokens == 30 and traj.usage.completion_tokens == 15 and traj.cost > 0
    assert "+goodbye" in (traj.submission or "")

    # agent_msgs/: every call the server saw, stream reassembled into one response
    calls = list(iter_steps(rollout / "agent_msgs"))
    assert len(calls) == len(scripted_llm.requests) == 3
    assert [c.request for c in calls] == [json.loads(r.raw) for r in scripted_llm.requests]
    last = calls[-1]
    assert last.request["stream"] is True
    assert last.request["messages"][-1]["content"][0]["type"] == "tool_result"
    assert last.response["content"] == [{"type": "text", "text": "greeting.txt now says goodbye."}]
    # the native log is kept beside the trajectory
    sessions = list((rollout / "agent_logs" / "session").rglob("*.jsonl"))
    assert len(sessions) == 1 and "goodbye" in sessions[0].read_text()
    assert '"type":"result"' in (rollout / "agent_logs" / "stdout.log").read_text().replace(" ", "")

    assert all(SECRET in r.headers.get("x-api-key", "") for r in scripted_llm.requests)
    leaked = [str(p) for p in out.rglob("*") if p.is_file() and SECRET in p.read_text(errors="replace")]
    assert leaked == []


def test_claude_code_passes_inside_bubblewrap(tmp_path: Path, scripted_llm) -> None:
    """sandbox: bwrap binds the host read-only: the cached install runs from there, state stays in scratch."""
    from tests.cli_agents.conftest import run_cli_rollout
    from tests.host_needs import need_bwrap

    need_bwrap()
    scripted_llm.set_responder(
        turns(call("Bash", command="sed -i s/hello/goodbye/ greeting.txt"), Reply(content="done"))
    )
    record, rollout, _ = run_cli_rollout(
        tmp_path, scripted_llm, "claude-code", "anthropic", environment={"sandbox": "bwrap"}
    )
    assert (record.exit_status, record.passed) == ("submitted", True), (rollout / "instance.log").read_text()
