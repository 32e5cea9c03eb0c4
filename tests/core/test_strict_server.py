"""Multi-step tool-calling rollouts against a server that validates requests as strict servers do."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from mimo_core.status import ExitStatus
from mimo_core.testing.scripted_llm import Reply, ScriptedLLM, call, turns
from tests.core.test_limits import run_inprocess

WORK_THEN_SUBMIT = turns(
    Reply(tool_calls=[("bash", {"command": "cat greeting.txt"})], reasoning="look first"),
    Reply(content="Editing now.", tool_calls=[("edit", {"path": "greeting.txt", "old_string": "hello",
                                                        "new_string": "goodbye"})]),
    Reply(content="I should check.", tool_calls=[("bash", {"command": "cat greeting.txt"}),
                                                 ("read", {"path": "greeting.txt"})]),
    Reply(content="Not a tool call."),  # a text-only turn the agent answers with a nudge
    call("submit"),
)


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.mark.parametrize("protocol", ["chat", "responses", "anthropic"])
def test_a_multi_step_tool_calling_rollout_passes_a_strict_server(protocol: str, workdir: Path, monkeypatch):
    with ScriptedLLM(WORK_THEN_SUBMIT, strict=True) as server:
        rec = run_inprocess(workdir, server, monkeypatch, protocol=protocol)
        assert server.rejected == []
        assert (rec.exit_status, rec.passed, rec.steps) == (ExitStatus.SUBMITTED, True, 5)
        assert len(server.requests) == 5


def test_the_strict_server_rejects_null_content_beside_tool_calls_as_llama_cpp_does():
    body = {"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}
    with ScriptedLLM(strict=True) as server:
        status, reply = _post(server.openai_base_url + "/chat/completions", body)
        assert status == 500 and "Input should be a valid string" in reply["error"]["message"]
        body["messages"][1]["content"] = ""
        assert _post(server.openai_base_url + "/chat/completions", body)[0] == 200


def test_the_strict_server_rejects_an_unanswered_anthropic_tool_use():
    body = {"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "and?"}]}]}
    with ScriptedLLM(strict=True) as server:
        status, reply = _post(server.url + "/v1/messages", body)
        assert status == 400 and "without tool_result" in reply["error"]["message"]
