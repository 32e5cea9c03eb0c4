"""A limit always ends a call: servers that trickle, stall after their headers, stream without end, or send
a body that never ends, against every protocol through the real SDKs, the default agent's time limit, and
the CLI agents' recording proxy. Each case must end within its limit (plus a margin for a loaded machine)
with the right status, and must have hung up on the server (else it would go on generating for no one)."""

from __future__ import annotations

import http.client
import json
import threading
import time
from pathlib import Path

import pytest

from mimo_core.agents.blackbox.proxy import RecordingProxy
from mimo_core.config import RetryConfig
from mimo_core.errors import ModelInterrupted, ModelRetriesExhausted
from mimo_core.run.batch import run_jobs
from mimo_core.run.plan import RunRequest, plan_run
from mimo_core.status import ExitStatus
from testkit.slow_server import MODES, SlowServer
from testkit.tasks import write_config, write_tasks
from tests.models.helpers import PROTOCOLS, model_for, start_messages

TIMEOUT = 1.5  # the request timeout under test
MARGIN = 6.0  # what a loaded 2-core machine may add
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "anthropic": "/v1/messages"}


def _model(server: SlowServer, protocol: str, timeout: float = TIMEOUT):
    return model_for(server, protocol, retry=RetryConfig(max_attempts=1, initial_delay=0.01, timeout=timeout))  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_request_timeout_bounds_the_whole_response(protocol: str, mode: str) -> None:
    with SlowServer(mode, interval=0.3) as server:
        model = _model(server, protocol)
        start = time.monotonic()
        with pytest.raises(ModelRetriesExhausted) as info:
            model.query(start_messages(), [], cancel=threading.Event())
        took = time.monotonic() - start
        assert TIMEOUT - 0.1 <= took < TIMEOUT + MARGIN, (mode, took)
        assert info.value.status is ExitStatus.MODEL_ERROR
        assert server.wait_closed(MARGIN), "the client gave up but kept the connection open"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_cancel_closes_the_connection_of_a_call_in_flight(protocol: str) -> None:
    with SlowServer("stream", interval=0.2) as server:
        model = _model(server, protocol, timeout=600)
        cancel = threading.Event()
        threading.Timer(0.5, cancel.set).start()
        start = time.monotonic()
        with pytest.raises(ModelInterrupted):
            model.query(start_messages(), [], cancel=cancel)
        assert time.monotonic() - start < 0.5 + MARGIN
        assert server.wait_closed(MARGIN), "an interrupted call must hang up so the server stops generating"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_time_limit_ends_a_rollout_whose_model_call_never_finishes(
    tmp_path: Path,
    protocol: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 60 s request timeout and a server that trickles: `agent.time_limit` (3 s) ends it, as `time_limit`."""
    with SlowServer("trickle", interval=1.0) as server:
        monkeypatch.setenv("MIMO_TEST_BASE_URL", server.url if protocol == "anthropic" else server.openai_base_url)
        monkeypatch.setenv("MIMO_TEST_API_KEY", "sk-slow-test-key")
        data = write_tasks(tmp_path)
        cfg = write_config(tmp_path, "slow", protocol=protocol, time_limit=3)
        text = cfg.read_text().replace("timeout: 5", "timeout: 60")
        cfg.write_text(text)
        request = RunRequest(dataset=str(data), configs=[str(cfg)], output_dir=tmp_path / "out", run_id="slow")
        start = time.monotonic()
        [record] = run_jobs(plan_run(request).jobs)
        took = time.monotonic() - start
    assert record.exit_status is ExitStatus.TIME_LIMIT, record.error
    assert record.reward is not None  # a time limit is the agent's outcome: graded
    assert took < 3 + MARGIN + 10  # the sandbox and the grading are in the rollout's time too
    assert "time_limit" in (record.error or "")


def _post_through(proxy: RecordingProxy, path: str, stream: bool) -> tuple[int, bytes | None, float]:
    host, port = proxy.address
    conn = http.client.HTTPConnection(host, port, timeout=60)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream})
    start = time.monotonic()
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    try:
        data: bytes | None = resp.read()
    except http.client.IncompleteRead:
        data = None  # the proxy cut the reply: the client sees it is not whole
    conn.close()
    return resp.status, data, time.monotonic() - start


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_cli_proxy_bounds_each_call_and_records_it(protocol: str, mode: str) -> None:
    recorded: list[dict] = []
    with SlowServer(mode, interval=0.3) as server:
        upstream = server.url if protocol == "anthropic" else server.openai_base_url
        sink = lambda step, req, resp, text: recorded.append(resp)  # noqa: E731
        with RecordingProxy(upstream, sink, timeout=TIMEOUT) as proxy:
            status, data, took = _post_through(proxy, PATHS[protocol].removeprefix("/v1"), mode == "stream")
            assert took < TIMEOUT + MARGIN, (mode, took)
            assert status == 504 or data is None, (status, data)  # an error answer, or a reply seen to be cut
            assert server.wait_closed(MARGIN)
        assert [r.get("_incomplete") for r in recorded] == ["timeout"]
        assert proxy.errors and "request timeout" in proxy.errors[-1]


def test_a_call_in_flight_when_the_proxy_stops_is_recorded_with_what_arrived() -> None:
    """The CLI was killed mid-call (Ctrl-C, its time limit): the proxy's stop records the call."""
    recorded: list[dict] = []
    with SlowServer("stream", interval=0.1) as server:
        proxy = RecordingProxy(server.openai_base_url, lambda s, q, r, t: recorded.append(r), timeout=600).start()
        host, port = proxy.address
        conn = http.client.HTTPConnection(host, port, timeout=60)
        conn.request(
            "POST",
            "/chat/completions",
            headers={"Content-Type": "application/json"},
            body=json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}),
        )
        resp = conn.getresponse()
        resp.read1(64)  # the stream has started
        proxy.stop()
        conn.close()
        assert server.wait_closed(MARGIN)
    [call] = recorded
    assert call["_incomplete"] == "stopped" and call["_stream"] is True
    assert call["choices"][0]["message"]["content"].startswith("x")  # what had arrived
