"""Multi-step tool-calling rollouts against a server that validates requests as strict servers do."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from mimo_core.status import ExitStatus
from testkit.scripted_llm import Reply, ScriptedLLM, call, turns
from tests.core.test_limits import run_inprocess

WORK_THEN_SUBMIT = turns(
    Reply(tool_calls=[("bash", {"command": "cat greeting.txt"})], reasoning="look first"),
    Reply(
        content="Editing now.",
        tool_calls=[("edit", {"path": "greeting.txt", "old_string": "hello", "new_string": "goodbye"})],
    ),
    Reply(
        content="I should check.",
        tool_calls=[("bash", {"command": "cat greeting.txt"}), ("read", {"path": "greeting.txt"})],
    ),
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
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
    }
    with ScriptedLLM(strict=True) as server:
        status, reply = _post(server.openai_base_url + "/chat/completions", body)
        assert status == 500 and "Input should be a valid string" in reply["error"]["message"]
        body["messages"][1]["content"] = ""
        assert _post(server.openai_base_url + "/chat/completions", body)[0] == 200


def test_the_strict_server_rejects_an_unanswered_anthropic_tool_use():
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]},
            {"role": "user", "content": [{"type": "text", "text": "and?"}]},
        ],
    }
    with ScriptedLLM(strict=True) as server:
        status, reply = _post(server.url + "/v1/messages", body)
        assert status == 400 and "without tool_result" in reply["error"]["message"]


LENIENT_THEN_SUBMIT = turns(
    Reply(tool_calls=[("bash", {})], raw_arguments={0: '{"command": "printf \'a\nb\'"}'}),  # a raw newline
    Reply(tool_calls=[("bash", {})], raw_arguments={0: '{"command": "ec'}),  # cut at the token cap
    call("submit"),
)


def test_lenient_and_truncated_tool_calls_go_back_as_json_a_strict_server_parses(workdir: Path, monkeypatch):
    """llama.cpp parses every earlier call's arguments; the raw text would fail each later request."""
    with ScriptedLLM(LENIENT_THEN_SUBMIT, strict=True) as server:
        rec = run_inprocess(workdir, server, monkeypatch)
        assert (rec.exit_status, rec.steps) == (ExitStatus.SUBMITTED, 3), rec.error
        last = server.requests[-1].body["messages"]
        sent = [c["function"]["arguments"] for m in last for c in m.get("tool_calls") or ()]
        assert json.loads(sent[0]) == {"command": "printf 'a\nb'"}
        assert json.loads(sent[1]) == {"_raw": '{"command": "ec'}


def test_a_request_validation_500_is_the_requests_fault_not_retried(workdir: Path, monkeypatch):
    def refuse_after_one_step(req):
        server.inject(
            500,
            body={
                "error": {
                    "code": 500,
                    "message": "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101]",
                    "type": "server_error",
                }
            },
        )
        return call("bash", command="true")

    with ScriptedLLM(refuse_after_one_step) as server:
        rec = run_inprocess(workdir, server, monkeypatch)
        assert rec.exit_status is ExitStatus.MODEL_BAD_REQUEST and len(server.requests) == 2
        assert "Failed to parse tool call arguments" in (rec.error or "")
