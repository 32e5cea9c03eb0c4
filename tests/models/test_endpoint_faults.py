"""What real endpoints do wrong, through the real SDKs: keys echoed in error bodies, request-validation
errors from strict servers, missing routes, calls that must stop when the run is interrupted."""

from __future__ import annotations

import json
import threading
import time

import pytest

from mimo_core.config import RetryConfig
from mimo_core.errors import ModelAuthError, ModelBadRequestError, ModelInterrupted, ModelRetriesExhausted
from mimo_core.models.messages import Message, ToolCall
from mimo_core.status import ExitStatus
from testkit.scripted_llm import Reply, turns
from tests.models.helpers import API_KEY, BASH, PROTOCOLS, model_for, start_messages

FAST = RetryConfig(max_attempts=3, initial_delay=0.001, max_delay=0.01, timeout=5.0)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_key_echoed_in_a_401_body_is_scrubbed_from_the_error(scripted_llm, protocol):
    scripted_llm.inject(
        401, body={"error": {"message": f"Incorrect API key provided: {API_KEY}.", "type": "invalid_api_key"}}
    )
    with pytest.raises(ModelAuthError) as info:
        model_for(scripted_llm, protocol).query(start_messages(), [])
    err = info.value
    assert API_KEY not in str(err) and "Incorrect API key provided: ***" in str(err)
    assert API_KEY not in json.dumps(err.response) and err.response["error"]["status"] == 401
    assert err.__cause__ is None  # a logged traceback must not carry the SDK's unscrubbed exception


def test_a_key_echoed_by_a_failing_server_is_scrubbed_after_retries(scripted_llm):
    scripted_llm.inject(503, times=5, body={"error": {"message": f"upstream rejected key {API_KEY}"}})
    with pytest.raises(ModelRetriesExhausted) as info:
        model_for(scripted_llm, "chat", retry=FAST).query(start_messages(), [])
    assert API_KEY not in str(info.value) and API_KEY not in json.dumps(info.value.response)


LLAMA_CPP_VALIDATION = {
    "error": {
        "message": "1 validation error for CreateChatCompletionRequest\nmessages.2.content\n"
        "  Input should be a valid string [type=string_type, input_value=None, input_type=NoneType]",
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
}


@pytest.mark.parametrize("status", [500, 422, 400])
def test_a_request_validation_error_is_reported_at_once_with_the_servers_message(scripted_llm, status):
    scripted_llm.inject(status, times=6, body=LLAMA_CPP_VALIDATION)
    with pytest.raises(ModelBadRequestError, match="Input should be a valid string") as info:
        model_for(scripted_llm, "chat", retry=FAST).query(start_messages(), [])
    assert len(scripted_llm.requests) == 1
    assert f"HTTP {status}" in str(info.value)


def test_a_plain_500_is_still_retried(scripted_llm):
    scripted_llm.inject(500, times=1, body={"error": {"message": "CUDA out of memory", "type": "server_error"}})
    assert model_for(scripted_llm, "chat", retry=FAST).query(start_messages(), []).attempts == 2


def test_chat_sends_a_string_content_beside_tool_calls(scripted_llm):
    """llama-cpp-python's request models require a string; `null` failed every request after a tool call."""
    history = [
        *start_messages(),
        Message(
            role="assistant",
            content=None,
            tool_calls=[ToolCall(id="call_1", name="bash", arguments='{"command": "ls"}')],
        ),
        Message(role="tool", tool_call_id="call_1", name="bash", content="a.txt\n"),
    ]
    model_for(scripted_llm, "chat").query(history, [BASH])
    sent = scripted_llm.requests[0].body["messages"]
    assert sent[2]["content"] == "" and sent[2]["tool_calls"][0]["id"] == "call_1"
    assert all(isinstance(m["content"], str) for m in sent)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_cancel_interrupts_a_call_in_flight(scripted_llm, protocol):
    scripted_llm.inject(0, delay=4.0)  # the server sits on the request
    model = model_for(scripted_llm, protocol, retry=FAST)  # (the SDK's import is not the call's time)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    start = time.monotonic()
    with pytest.raises(ModelInterrupted) as info:
        model.query(start_messages(), [], cancel=cancel)
    assert time.monotonic() - start < 3.0  # cancelled at 0.3 s; the server would answer at 4 s
    assert info.value.status == ExitStatus.INTERRUPTED and info.value.request is not None


def test_cancel_cuts_the_wait_before_a_retry(scripted_llm):
    scripted_llm.inject(429, retry_after=30)
    model = model_for(scripted_llm, "chat", retry=RetryConfig(max_attempts=3, max_delay=60, timeout=5))
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    start = time.monotonic()
    with pytest.raises(ModelInterrupted):
        model.query(start_messages(), [], cancel=cancel)
    assert time.monotonic() - start < 10  # cancelled at 0.3 s; the retry would come after 30 s


def test_a_call_with_cancel_given_still_returns_normally(scripted_llm):
    scripted_llm.set_responder(turns(Reply(content="fine")))
    resp = model_for(scripted_llm, "chat").query(start_messages(), [], cancel=threading.Event())
    assert resp.message.content == "fine"
