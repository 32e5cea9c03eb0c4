"""A streamed chat reply's vLLM token ids survive the CLI agents' stream reassembly (what the recording
proxy writes to agent_msgs/), so the rl export reads the same ids as from an unstreamed reply."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from mimo_core.agents.blackbox.streams import reassemble
from mimo_core.models.token_ids import token_fields
from testkit.scripted_llm import ScriptedLLM, call, turns


def _post(url: str, body: dict[str, Any]) -> bytes:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.read()


ASK = {"logprobs": True, "return_tokens_as_token_ids": True, "return_token_ids": True}


def test_streamed_token_ids_equal_the_unstreamed_ones() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "make greeting.txt say goodbye"}], **ASK}
    with ScriptedLLM(turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"))) as llm:
        url = f"{llm.openai_base_url}/chat/completions"
        whole = json.loads(_post(url, body))
        raw = _post(url, {**body, "stream": True})
        plain = json.loads(_post(url, {**body, "logprobs": False, "return_token_ids": False}))
    streamed = reassemble("chat", raw, is_stream=True)
    fields = token_fields(streamed)
    assert fields.prompt_ids and fields.completion_ids and fields.logprobs
    assert fields == token_fields(whole)
    assert (
        json.loads(streamed["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])["path"]
        == "greeting.txt"
    )
    assert token_fields(plain).missing() == ["prompt token ids", "completion token ids"]  # not asked for
