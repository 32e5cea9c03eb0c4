"""codex end to end: pinned from npm with a bundled Node, `codex exec` against the scripted server
speaking the streaming Responses API, edits the file with its own exec_command tool, graded Pass."""

from __future__ import annotations

import json
from pathlib import Path

from mimo_core.status import ExitStatus
from testkit.scripted_llm import Reply, call, turns
from tests.cli_agents.conftest import leaked_files, recorded_calls, run_cli_rollout
from tests.core.conftest import SECRET

CAT_SED_DONE = turns(
    Reply(content="Looking.", tool_calls=[("exec_command", {"cmd": "cat greeting.txt"})], reasoning="check it"),
    call("exec_command", cmd="sed -i s/hello/goodbye/ greeting.txt"),
    Reply(content="greeting.txt says goodbye now."),
)


def test_codex_edits_the_file_and_passes(tmp_path: Path, scripted_llm) -> None:
    scripted_llm.set_responder(CAT_SED_DONE)
    record, rollout, traj = run_cli_rollout(tmp_path, scripted_llm, "codex", "responses")
    assert (record.exit_status, record.passed, record.steps) == (ExitStatus.SUBMITTED, True, 3), (
        rollout / "instance.log"
    ).read_text()
    roles = [m.role for m in traj.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert traj.messages[2].reasoning == "check it"
    assert json.loads((traj.messages[4].tool_calls or [])[0].arguments)["cmd"].startswith("sed")
    assert "hello" in (traj.messages[3].content or "")
    assert "exec_command" in {t.name for t in traj.tools}
    assert traj.usage.prompt_tokens == 30 and traj.cost > 0
    calls = recorded_calls(rollout, scripted_llm)
    assert len(calls) == 3
    last = calls[-1]
    assert last.request["stream"] is True and last.response["status"] == "completed"
    assert list((rollout / "agent_logs" / "session").rglob("rollout-*.jsonl"))
    assert all(SECRET in r.headers.get("authorization", "") for r in scripted_llm.requests)
    assert leaked_files(tmp_path / "out", SECRET) == []
