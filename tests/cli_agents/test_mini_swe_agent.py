"""mini-swe-agent end to end: pinned from PyPI into a cached virtualenv, `mini -y --exit-immediately`
against the scripted server speaking OpenAI-compatible chat (through litellm), graded Pass."""

from __future__ import annotations

import json
from pathlib import Path

from mimo_core.status import ExitStatus
from testkit.scripted_llm import Reply, call, turns
from tests.cli_agents.conftest import leaked_files, recorded_calls, run_cli_rollout
from tests.core.conftest import SECRET

CAT_SED_SUBMIT = turns(
    Reply(content="Looking.", tool_calls=[("bash", {"command": "cat greeting.txt"})], reasoning="hmm"),
    call("bash", command="sed -i s/hello/goodbye/ greeting.txt"),
    call("bash", command="echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
)


def test_mini_swe_agent_edits_the_file_and_passes(tmp_path: Path, scripted_llm) -> None:
    scripted_llm.set_responder(CAT_SED_SUBMIT)
    record, rollout, traj = run_cli_rollout(tmp_path, scripted_llm, "mini-swe-agent", "chat")
    assert (record.exit_status, record.passed, record.steps) == (ExitStatus.SUBMITTED, True, 3), (
        rollout / "instance.log"
    ).read_text()
    roles = [m.role for m in traj.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]
    assert traj.messages[2].reasoning == "hmm" and traj.messages[2].content == "Looking."
    assert json.loads((traj.messages[4].tool_calls or [])[0].arguments)["command"].startswith("sed")
    assert "hello" in (traj.messages[3].content or "")
    assert [t.name for t in traj.tools] == ["bash"]
    assert traj.usage.prompt_tokens == 30 and traj.cost > 0
    calls = recorded_calls(rollout, scripted_llm)
    assert len(calls) == 3 and calls[-1].response["choices"][0]["message"]["tool_calls"]
    assert (rollout / "agent_logs" / "session" / "trajectory.json").is_file()
    assert all(SECRET in r.headers.get("authorization", "") for r in scripted_llm.requests)
    assert leaked_files(tmp_path / "out", SECRET) == []
