"""Retries and error mapping through the real SDKs: injected 429/5xx/timeouts, and failures never retried."""

from __future__ import annotations

import time

import pytest

from mimo_core.config import RetryConfig
from mimo_core.errors import (
    ContextWindowError,
    ModelAuthError,
    ModelBadRequestError,
    ModelEndpointError,
    ModelRetriesExhausted,
)
from mimo_core.models.retry import backoff
from testkit.scripted_llm import Reply, ScriptedLLM, turns
from tests.models.helpers import PROTOCOLS, model_for, start_messages


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_429_waits_for_retry_after_then_succeeds(scripted_llm, protocol):
    scripted_llm.set_responder(turns(Reply(content="ok")))
    scripted_llm.inject(429, retry_after=0.4)
    model = model_for(
        scripted_llm, protocol, retry=RetryConfig(max_attempts=3, initial_delay=0.001, max_delay=5.0, timeout=5.0)
    )
    start = time.perf_counter()
    resp = model.query(start_messages(), [])
    elapsed = time.perf_counter() - start
    assert resp.message.content == "ok" and resp.attempts == 2
    assert len(scripted_llm.requests) == 2
    assert 0.4 <= elapsed < 2.0


def test_retry_after_ms_header_is_honoured(scripted_llm):
    scripted_llm.inject(429, headers={"retry-after-ms": "300"})
    model = model_for(
        scripted_llm, "chat", retry=RetryConfig(max_attempts=2, initial_delay=0.001, max_delay=5.0, timeout=5.0)
    )
    start = time.perf_counter()
    assert model.query(start_messages(), []).attempts == 2
    assert time.perf_counter() - start >= 0.3


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_server_errors_are_retried_until_success(scripted_llm, protocol):
    scripted_llm.inject(500, times=2)
    resp = model_for(scripted_llm, protocol).query(start_messages(), [])
    assert resp.attempts == 3 and len(scripted_llm.requests) == 3


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_timeout_is_retried(scripted_llm, protocol):
    scripted_llm.inject(0, delay=1.5)  # hang past the client timeout, then answer (too late)
    model = model_for(
        scripted_llm, protocol, retry=RetryConfig(max_attempts=3, initial_delay=0.001, max_delay=0.01, timeout=0.3)
    )
    start = time.perf_counter()
    resp = model.query(start_messages(), [])
    assert resp.attempts == 2
    assert 0.3 <= time.perf_counter() - start < 1.5


def test_retries_are_bounded_by_max_attempts(scripted_llm):
    scripted_llm.inject(503, times=10)
    model = model_for(
        scripted_llm, "chat", retry=RetryConfig(max_attempts=3, initial_delay=0.001, max_delay=0.01, timeout=5.0)
    )
    with pytest.raises(ModelRetriesExhausted, match="3 attempts"):
        model.query(start_messages(), [])
    assert len(scripted_llm.requests) == 3


def test_unreachable_endpoint_exhausts_retries():
    server = ScriptedLLM().start()
    url = server.url
    server.stop()
    model = model_for(
        _Fixed(url), "chat", retry=RetryConfig(max_attempts=2, initial_delay=0.001, max_delay=0.01, timeout=2.0)
    )
    with pytest.raises(ModelRetriesExhausted, match="2 attempts"):
        model.query(start_messages(), [])


class _Fixed:
    """Stands in for a server that has gone away: only its URLs remain."""

    def __init__(self, url: str):
        self.url = url
        self.openai_base_url = url + "/v1"


@pytest.mark.parametrize(
    "status,error",
    [
        (401, ModelAuthError),
        (403, ModelAuthError),
        (400, ModelBadRequestError),
        (404, ModelEndpointError),
        (422, ModelBadRequestError),
    ],
)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_client_errors_are_not_retried(scripted_llm, protocol, status, error):
    scripted_llm.inject(status, times=5)
    with pytest.raises(error):
        model_for(scripted_llm, protocol).query(start_messages(), [])
    assert len(scripted_llm.requests) == 1


CONTEXT_BODIES = {
    "chat": {
        "error": {
            "message": "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    },
    "responses": {
        "error": {
            "message": "Your input exceeds the limit.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    },
    "anthropic": {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"},
    },
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_context_window_overflow_maps_to_its_own_error(scripted_llm, protocol):
    scripted_llm.inject(400, body=CONTEXT_BODIES[protocol])
    with pytest.raises(ContextWindowError):
        model_for(scripted_llm, protocol).query(start_messages(), [])
    assert len(scripted_llm.requests) == 1


def test_backoff_is_jittered_and_capped():
    cfg = RetryConfig(initial_delay=1.0, max_delay=4.0)
    waits = [backoff(attempt, cfg) for attempt in range(1, 8) for _ in range(50)]
    assert all(0.0 <= w <= 4.0 for w in waits)
    assert len(set(waits)) > 100
    assert max(backoff(1, cfg) for _ in range(200)) <= 1.0
