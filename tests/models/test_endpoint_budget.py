"""The per-endpoint budget (mimo_core/models/endpoint_budget.py): its rules on their own, then every
protocol's real SDK client and the CLI agents' recording proxy against a scripted server that limits
like the providers (testkit/scripted_limits.py)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from mimo_core.agents.blackbox.proxy import RecordingProxy
from mimo_core.agents.stop import AgentStop
from mimo_core.config import ModelConfig, RetryConfig
from mimo_core.errors import ModelInterrupted
from mimo_core.models.endpoint_budget import BACKOFF, START, EndpointBudget, budget_for
from mimo_core.models.factory import make_model
from testkit.scripted_llm import Reply, ScriptedLLM, turns
from tests.models.helpers import API_KEY, BASH, start_messages


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_concurrency_cap_keeps_the_rest_waiting_and_counts_their_waits() -> None:
    budget = EndpointBudget("e", max_concurrency=3)
    gate, peak, lock, running = threading.Event(), [0], threading.Lock(), [0]

    def call() -> float:
        ticket = budget.acquire()
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        gate.wait(5)
        with lock:
            running[0] -= 1
        budget.release(ticket)
        return ticket.waited_s

    with ThreadPoolExecutor(12) as pool:
        futures = [pool.submit(call) for _ in range(12)]
        deadline = time.monotonic() + 5
        while budget.waiting < 9 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert budget.in_flight == 3 and budget.waiting == 9
        gate.set()
        waits = [f.result() for f in futures]
    assert peak[0] == 3 and budget.in_flight == 0
    assert sum(w > 0 for w in waits) == 9 == budget.stats.waits


def test_adaptive_cuts_once_per_round_holds_for_retry_after_and_grows_back() -> None:
    clock = Clock()
    budget = EndpointBudget("e", clock=clock)
    assert budget.limit == START == 4
    tickets = [budget.acquire() for _ in range(4)]
    clock.now += 1
    budget.release(tickets[0], 429, retry_after=2.0)
    budget.release(tickets[1], 529)  # started before the cut: the same round, no second cut
    assert budget.limit == 4 * BACKOFF and budget.stats.overloads == 2
    budget.release(tickets[2])
    budget.release(tickets[3])
    assert budget._delay(clock.now, 0) == pytest.approx(2.0)  # held for Retry-After
    clock.now += 2.0
    t = budget.acquire()
    budget.release(t, 503)  # a call of the new round cuts again
    assert budget.limit == 4 * BACKOFF * BACKOFF
    for _ in range(4):  # grows while the limit is what holds calls back: rounds that fill it
        held = [budget.acquire() for _ in range(int(budget.limit))]
        for ticket in held:
            budget.release(ticket)
    assert 3.0 < budget.limit < 4.0
    grown = budget.limit
    budget.release(budget.acquire())  # one call alone does not need a larger limit
    assert budget.limit == grown


def test_requests_per_minute_are_spaced_and_tokens_per_minute_refill() -> None:
    clock = Clock()
    budget = EndpointBudget("e", requests_per_minute=600, tokens_per_minute=6000, clock=clock)
    budget.release(budget.acquire(estimate=1000))
    assert budget._delay(clock.now, 100) == pytest.approx(0.1)  # 600 rpm: one start every 0.1 s
    clock.now += 0.1
    assert budget._delay(clock.now, 100) == 0.0
    t = budget.acquire(estimate=100)
    budget.charge(5010, t)  # the endpoint counted more than estimated (6000 - 1000 + 10 - 5010): empty now
    budget.release(t)
    clock.now += 0.1  # 10 tokens back per 0.1 s
    assert budget._delay(clock.now, 100) == pytest.approx((100 - 10) / 100.0)


def test_waiting_ends_at_a_stop_and_does_not_count_against_the_time_limit() -> None:
    budget = EndpointBudget("e", max_concurrency=1)
    held = budget.acquire()
    cancel = threading.Event()
    threading.Timer(0.1, cancel.set).start()
    t0 = time.monotonic()
    with pytest.raises(ModelInterrupted):
        budget.acquire((cancel,))
    assert time.monotonic() - t0 < 1.0 and budget.waiting == 0

    stop = AgentStop(None, seconds=0.2)
    threading.Timer(0.4, lambda: budget.release(held)).start()
    ticket = budget.acquire((stop,))  # waits 0.4 s, past the 0.2 s limit: the clock stood still
    assert ticket.waited_s >= 0.35 and not stop.is_set()
    assert stop.paused_s >= 0.35 and 0.1 < stop.remaining() <= 0.2


def _model(server: ScriptedLLM, protocol: str, **limits):
    base_url = server.url if protocol == "anthropic" else server.openai_base_url
    cfg = ModelConfig(
        model_name="scripted-model",
        protocol=protocol,
        model_kwargs={"base_url": base_url, "api_key": API_KEY},
        retry=RetryConfig(max_attempts=8, initial_delay=0.01, max_delay=0.1, timeout=10.0),
        **limits,
    )
    return make_model(cfg), budget_for(cfg)


@pytest.mark.parametrize("protocol", ["chat", "responses", "anthropic"])
def test_64_threads_against_8_allowed_keep_8_in_flight_with_no_refusal(protocol: str) -> None:
    with ScriptedLLM(turns(Reply(content="ok")), latency=0.01) as server:
        limits = server.rate_limit(max_concurrency=8, style="anthropic" if protocol == "anthropic" else "openai")
        model, budget = _model(server, protocol, max_concurrency=8)
        with ThreadPoolExecutor(64) as pool:
            replies = list(pool.map(lambda _: model.query(start_messages(), [BASH]), range(96)))
    assert all(r.message.content == "ok" for r in replies)
    assert limits.refused == 0 and 2 <= limits.max_seen <= 8 and limits.admitted == 96
    assert budget.stats.waits > 0 and sum(r.wait_s for r in replies) > 0
    assert all(r.attempts == 1 for r in replies)


@pytest.mark.parametrize("protocol", ["chat", "anthropic"])
def test_adaptive_default_against_a_cap_of_8_ends_with_no_failure(protocol: str) -> None:
    with ScriptedLLM(turns(Reply(content="ok")), latency=0.01) as server:
        style = "anthropic" if protocol == "anthropic" else "openai"
        limits = server.rate_limit(max_concurrency=8, style=style, retry_after=0.02)
        model, budget = _model(server, protocol)
        with ThreadPoolExecutor(64) as pool:
            replies = list(pool.map(lambda _: model.query(start_messages(), [BASH]), range(240)))
    assert len(replies) == 240 and all(r.message.content == "ok" for r in replies)
    assert limits.admitted == 240 and limits.max_seen <= 8
    # Every refusal was seen as an overload, and they stay few beside the calls: no storm of 429s/529s.
    assert limits.refused == budget.stats.overloads and limits.refused < 60


def test_the_recording_proxy_draws_from_the_same_budget() -> None:
    with ScriptedLLM(turns(Reply(content="ok")), latency=0.02) as server:
        limits = server.rate_limit(max_concurrency=3)
        cfg = ModelConfig(model_name="m", model_kwargs={"base_url": server.openai_base_url}, max_concurrency=3)
        budget = budget_for(cfg)
        own = budget.acquire()  # our own agent holds one slot: the CLI gets the other two
        recorded: list[int] = []
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        with RecordingProxy(server.openai_base_url, lambda s, q, r, t: recorded.append(s), budget=budget) as proxy:
            with ThreadPoolExecutor(12) as pool:
                codes = list(
                    pool.map(
                        lambda _: httpx.post(proxy.url() + "/chat/completions", json=body, timeout=10).status_code,
                        range(12),
                    )
                )
            budget.release(own)
        assert codes == [200] * 12 and len(recorded) == 12
        assert limits.refused == 0 and limits.max_seen == 2
        assert sum(c.wait_s for c in proxy.calls) > 0


def test_one_budget_per_endpoint_the_strictest_limits_and_a_label_without_credentials() -> None:
    url = "http://user:s3cret-key@budget-host:9/v1"
    a = ModelConfig(model_name="m", model_kwargs={"base_url": url}, max_concurrency=16, requests_per_minute=600)
    b = ModelConfig(model_name="m", model_kwargs={"base_url": url + "/"}, max_concurrency=4, tokens_per_minute=9000)
    other = ModelConfig(model_name="n", model_kwargs={"base_url": url})
    budget = budget_for(a)
    assert budget_for(b) is budget and budget_for(other) is not budget
    assert (budget.max_concurrency, budget.limit) == (4, 4.0)
    assert (budget.requests_per_minute, budget.tokens_per_minute) == (600, 9000)
    assert budget.snapshot()["endpoint"] == "budget-host:9/m" and "s3cret" not in str(budget.snapshot())


@pytest.mark.parametrize(
    "limits, key",
    [
        ({"max_concurrency": 0}, "model.max_concurrency"),
        ({"requests_per_minute": -1}, "model.requests_per_minute"),
        ({"tokens_per_minute": True}, "model.tokens_per_minute"),
    ],
)
def test_limits_out_of_range_are_config_errors_naming_the_key(limits: dict, key: str) -> None:
    from mimo_core.config import validate_config
    from mimo_core.errors import ConfigError

    with pytest.raises(ConfigError, match=rf"cfg.yaml: {key}: "):
        validate_config({"model": limits}, "cfg.yaml")


def test_requests_per_minute_keep_under_a_providers_window_through_the_sdk() -> None:
    """40 requests per second allowed (a 1 s window); the client, told 2400 per minute, spaces its starts."""
    with ScriptedLLM(turns(Reply(content="ok"))) as server:
        limits = server.rate_limit(requests_per_window=40, window_s=1.0, retry_after=0.2)
        model, budget = _model(server, "chat", requests_per_minute=2400)
        t0 = time.monotonic()
        with ThreadPoolExecutor(32) as pool:
            replies = list(pool.map(lambda _: model.query(start_messages(), [BASH]), range(100)))
        elapsed = time.monotonic() - t0
    assert len(replies) == 100 and limits.admitted == 100
    assert limits.refused <= 3  # (a start that arrives late can meet one that arrived early: rare, and retried)
    assert elapsed >= 99 / 40 * 0.95  # never faster than allowed


def test_a_call_waiting_for_its_budget_keeps_its_time_limit_and_ends_at_a_stop() -> None:
    """Through a protocol's query: the wait is not the call's latency nor the agent's time, and a stop
    ends it at once."""
    with ScriptedLLM(turns(Reply(content="ok"))) as server:
        model, budget = _model(server, "chat", max_concurrency=1)
        held = budget.acquire()
        threading.Timer(0.6, lambda: budget.release(held)).start()
        stop = AgentStop(None, seconds=0.3)
        resp = model.query(start_messages(), [BASH], cancel=stop)  # waits 0.6 s, past the 0.3 s limit
        assert resp.message.content == "ok" and not stop.is_set()
        assert resp.wait_s >= 0.5 and resp.latency_s < resp.wait_s

        held = budget.acquire()
        cancel = threading.Event()
        threading.Timer(0.1, cancel.set).start()
        t0 = time.monotonic()
        with pytest.raises(ModelInterrupted):
            model.query(start_messages(), [BASH], cancel=AgentStop(cancel, seconds=0))
        assert time.monotonic() - t0 < 1.0 and len(server.requests) == 1
        budget.release(held)
