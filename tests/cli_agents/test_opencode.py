"""opencode end to end: pinned from npm, `opencode run` against the scripted server speaking streaming
OpenAI-compatible chat, edits the file with its own read/edit tools, graded Pass."""

from __future__ import annotations

import json
from pathlib import Path

from mimo_core.status import ExitStatus
from testkit.scripted_llm import Reply, call
from tests.cli_agents.conftest import leaked_files, recorded_calls, run_cli_rollout, scripted_in_workdir
from tests.core.conftest import SECRET

READ_EDIT_DONE = scripted_in_workdir(
    lambda w: Reply(content="Looking.", tool_calls=[("read", {"filePath": f"{w}/greeting.txt"})], reasoning="hmm"),
    lambda w: call("edit", filePath=f"{w}/greeting.txt", oldString="hello", newString="goodbye"),
    lambda w: Reply(content="greeting.txt says goodbye now."),
)


def test_opencode_edits_the_file_and_passes(tmp_path: Path, scripted_llm) -> None:
    scripted_llm.set_responder(READ_EDIT_DONE)
    record, rollout, traj = run_cli_rollout(tmp_path, scripted_llm, "opencode", "chat")
    assert (record.exit_status, record.passed, record.steps) == (ExitStatus.SUBMITTED, True, 3), (
        rollout / "instance.log"
    ).read_text()
    roles = [m.role for m in traj.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert traj.messages[2].reasoning == "hmm"
    assert json.loads((traj.messages[4].tool_calls or [])[0].arguments)["newString"] == "goodbye"
    assert "hello" in (traj.messages[3].content or "")
    assert {"read", "edit", "bash"} <= {t.name for t in traj.tools}
    assert traj.usage.prompt_tokens == 30 and traj.cost > 0
    calls = recorded_calls(rollout, scripted_llm)
    assert len(calls) == 3
    last = calls[-1]
    assert last.request["stream"] is True
    assert last.response["choices"][0]["message"]["content"] == "greeting.txt says goodbye now."
    assert (rollout / "agent_logs" / "session" / "session.json").is_file()
    assert all(SECRET in r.headers.get("authorization", "") for r in scripted_llm.requests)
    assert leaked_files(tmp_path / "out", SECRET) == []
