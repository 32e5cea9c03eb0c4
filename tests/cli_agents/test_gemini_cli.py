"""gemini-cli end to end: pinned from npm on the bundled Node, headless against the scripted server
speaking the streaming Gemini API, edits the file with its own read_file/replace tools, graded Pass."""

from __future__ import annotations

import json
from pathlib import Path

from mimo_core.status import ExitStatus
from testkit.scripted_llm import Reply, call
from tests.cli_agents.conftest import leaked_files, recorded_calls, run_cli_rollout, scripted_in_workdir
from tests.core.conftest import SECRET

READ_REPLACE_DONE = scripted_in_workdir(
    lambda w: Reply(
        content="Looking.", tool_calls=[("read_file", {"file_path": f"{w}/greeting.txt"})], reasoning="hmm"
    ),
    lambda w: call(
        "replace", file_path=f"{w}/greeting.txt", old_string="hello", new_string="goodbye", instruction="say goodbye"
    ),
    lambda w: Reply(content="greeting.txt says goodbye now."),
)


def test_gemini_cli_edits_the_file_and_passes(tmp_path: Path, scripted_llm) -> None:
    scripted_llm.set_responder(READ_REPLACE_DONE)
    record, rollout, traj = run_cli_rollout(tmp_path, scripted_llm, "gemini-cli", "gemini")
    assert (record.exit_status, record.passed, record.steps) == (ExitStatus.SUBMITTED, True, 3), (
        rollout / "instance.log"
    ).read_text()
    roles = [m.role for m in traj.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert traj.messages[2].reasoning == "hmm" and traj.messages[2].content == "Looking."
    assert json.loads((traj.messages[4].tool_calls or [])[0].arguments)["new_string"] == "goodbye"
    assert traj.messages[3].content == "hello\n"
    assert {"read_file", "replace", "run_shell_command"} <= {t.name for t in traj.tools}
    assert traj.usage.prompt_tokens == 30 and traj.cost > 0
    calls = recorded_calls(rollout, scripted_llm)
    assert len(calls) == 3 and "contents" in calls[-1].request
    assert calls[-1].response["candidates"][0]["content"]["parts"] == [{"text": "greeting.txt says goodbye now."}]
    assert list((rollout / "agent_logs" / "session").rglob("session-*.jsonl"))
    assert all(SECRET in r.headers.get("x-goog-api-key", "") for r in scripted_llm.requests)
    assert leaked_files(tmp_path / "out", SECRET) == []
