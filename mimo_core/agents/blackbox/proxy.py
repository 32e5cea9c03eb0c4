"""A recording proxy on loopback between a CLI agent and its model endpoint.

A third-party CLI is a black box, but its model calls are not: pointed at this proxy instead of the
endpoint, every request and response passes through here unchanged (streams are forwarded chunk by
chunk as they arrive) and a copy of each call, with the stream reassembled into one response, is handed
to the rollout's recorder as a training sample. Only bodies are recorded: headers and query strings,
where keys travel, never are. The request timeout bounds each call's whole response, and a call still in
flight when the proxy stops is recorded with what arrived (`inflight.py`); its record says why it ended
early (`_incomplete`).
"""

from __future__ import annotations

import http.client
import itertools
import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from mimo_core.agents.blackbox.inflight import InFlight, Watchdog
from mimo_core.agents.blackbox.loopback_server import LoopbackServer
from mimo_core.agents.blackbox.streams import protocol_of, reassemble, usage_of
from mimo_core.config import PricingConfig
from mimo_core.errors import ModelInterrupted
from mimo_core.models.base import CallRecord, Usage
from mimo_core.models.endpoint_budget import EndpointBudget
from mimo_core.models.protocol import compute_cost

Sink = Callable[[int, dict[str, Any], dict[str, Any], str], None]  # step, request, response, request as sent
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "host",
        "accept-encoding",
        "content-encoding",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
    }
)


class RecordingProxy(LoopbackServer):
    """Forwards every request to `upstream` (its path appended to the upstream base URL) and records it."""

    def __init__(
        self,
        upstream: str,
        sink: Sink,
        pricing: PricingConfig | None = None,
        bind: str = "127.0.0.1",
        timeout: float = 600.0,
        cost_limit: float = 0.0,
        listening: socket.socket | None = None,
        budget: EndpointBudget | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"model base URL {upstream!r} is not an http(s) URL")
        self.scheme, self.host, self.port = parts.scheme, parts.hostname, parts.port
        self.base_path = parts.path.rstrip("/")
        self.sink, self.pricing, self.bind, self.timeout = sink, pricing, bind, timeout
        self.listening = listening  # a socket made inside the sandbox's network namespace, to serve on
        self.cost_limit = cost_limit  # dollars; 0 = none. Past it, model calls are refused (400)
        self.over_budget = False
        self.calls: list[CallRecord] = []
        self.errors: list[str] = []
        self._steps = itertools.count(1)
        self._lock = threading.Lock()
        self.watchdog = Watchdog()
        self.budget, self.cancel = budget, cancel  # the endpoint's budget, shared with the whole run
        self._stopping = threading.Event()

    def start(self) -> RecordingProxy:
        self._serve(
            type("_ProxyHandler", (_Handler,), {"proxy": self}), self.bind, "cli-recording-proxy", self.listening
        )
        self.watchdog.start()
        return self

    def stop(self) -> None:
        """Calls still in flight (the CLI was killed mid-call) are recorded with what arrived, first."""
        self._stopping.set()  # calls waiting for the budget give up
        self.watchdog.stop_all(self.record_flight)
        super().stop()

    def record_flight(self, call: InFlight) -> None:
        if call.request is None:
            return
        with call.lock:
            raw, status, ended = bytes(call.received), call.status, call.ended
        self.record(
            call.path,
            call.request,
            call.request_text,
            status or 0,
            raw,
            call.is_stream,
            time.monotonic() - call.start,
            incomplete=ended,
            wait_s=call.wait_s,
        )

    @property
    def port_number(self) -> int:
        return self.address[1]

    def url(self, host: str = "127.0.0.1") -> str:
        """The base URL a CLI is given: the proxy's origin as `host` sees it (paths are passed on as sent)."""
        return f"http://{host}:{self.port_number}"

    @property
    def cost(self) -> float:
        with self._lock:
            return sum(c.cost for c in self.calls)

    def refuses(self, method: str) -> bool:
        """agent.cost_limit: once the calls so far cost that much, the next model call is not forwarded."""
        if method != "POST" or not self.cost_limit or self.cost < self.cost_limit:
            return False
        self.over_budget = True
        return True

    @property
    def usage(self) -> Usage:
        total = Usage()
        for c in self.calls:
            total = total + c.usage
        return total

    def connection(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=self.timeout)

    def record(
        self,
        path: str,
        request: dict[str, Any],
        request_text: str,
        status: int,
        raw: bytes,
        is_stream: bool,
        latency: float,
        incomplete: str | None = None,
        wait_s: float = 0.0,
    ) -> None:
        """Steps are numbered and handed over under one lock: the step files are deltas of each other.
        `incomplete`: the call ended early ("timeout", "stopped"); `_http_status` 0: before any header."""
        protocol = protocol_of(path)
        response = reassemble(protocol, raw, is_stream) if raw else {}
        if status != 200:
            response = {"_http_status": status, **response}
        if incomplete is not None:
            response = {**response, "_incomplete": incomplete}
        usage = usage_of(protocol, response) if status == 200 else Usage()
        with self._lock:
            step = next(self._steps)
            self.calls.append(
                CallRecord(
                    step=step,
                    usage=usage,
                    latency_s=round(latency, 4),
                    wait_s=round(wait_s, 4),
                    cost=compute_cost(usage, self.pricing),
                    finish_reason=_finish(response),
                )
            )
            self.sink(step, request, response, request_text)


def _finish(response: dict[str, Any]) -> str | None:
    if "stop_reason" in response:
        return response.get("stop_reason")
    choices = response.get("choices") or response.get("candidates") or ()
    if choices and isinstance(choices[0], dict):
        return choices[0].get("finish_reason") or choices[0].get("finishReason")
    return response.get("status") if response.get("object") == "response" else None


class _Handler(BaseHTTPRequestHandler):
    proxy: RecordingProxy
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _forward(self) -> None:
        proxy = self.proxy
        body = self._body()
        if proxy.refuses(self.command):
            self._reply_error(400, f"mimoagent: agent.cost_limit ${proxy.cost_limit:g} reached")
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        headers["Accept-Encoding"] = "identity"  # streams must arrive as the CLI will read them
        ticket = None
        if proxy.budget is not None and self.command == "POST":
            try:
                ticket = proxy.budget.acquire((proxy.cancel, proxy._stopping), len(body) // 4)
            except ModelInterrupted:
                self._reply_error(503, "recording proxy: stopped while waiting for the endpoint's budget")
                return
        start = time.monotonic()
        request = _json(body) if self.command == "POST" else None
        call = InFlight(
            path=self.path.split("?", 1)[0],
            request=request,
            request_text=body.decode("utf-8", errors="replace"),
            start=start,
            deadline=start + proxy.timeout,
            conn=proxy.connection(),
        )
        call.wait_s = ticket.waited_s if ticket is not None else 0.0
        proxy.watchdog.add(call)
        try:
            self._relay(call, body, headers)
        finally:
            proxy.watchdog.remove(call)
            if call.conn is not None:
                call.conn.close()
            if ticket is not None and proxy.budget is not None:
                proxy.budget.release(ticket, call.status, _seconds(call.retry_after))
        if request is not None and call.claim():
            proxy.record_flight(call)

    def _relay(self, call: InFlight, body: bytes, headers: dict[str, str]) -> None:
        proxy, conn = self.proxy, call.conn
        assert conn is not None
        try:
            conn.request(self.command, proxy.base_path + self.path, body=body or None, headers=headers)
            upstream = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            call.timed_out_by(e)
            if call.ended == "timeout":
                why = f"no answer within the request timeout ({proxy.timeout:g}s)"
                proxy.errors.append(f"the model endpoint gave {why}")
                self._reply_error(504, f"recording proxy: the model endpoint gave {why}")
            else:
                proxy.errors.append(f"{type(e).__name__}: {e}")
                self._reply_error(502, f"recording proxy: model endpoint unreachable: {type(e).__name__}")
            return
        with call.lock:
            call.status = upstream.status
            call.retry_after = upstream.getheader("retry-after")
            call.is_stream = "text/event-stream" in (upstream.getheader("Content-Type") or "")
        self.send_response(upstream.status)
        for k, v in upstream.getheaders():
            if k.lower() not in _HOP:
                self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while chunk := upstream.read1(65536):
                if call.ended is not None:  # a shut socket may still yield what the kernel had buffered
                    break
                with call.lock:
                    call.received += chunk
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
        except (OSError, http.client.HTTPException) as e:
            call.timed_out_by(e)
            # The upstream was cut (the watchdog: past the request timeout) or the CLI hung up. The CLI gets
            # no end-of-body marker, so it sees the reply was cut; what came is still recorded.
            self.close_connection = True
            if call.ended == "timeout":
                proxy.errors.append(
                    f"the model endpoint's reply took longer than the request timeout ({proxy.timeout:g}s)"
                )
            return
        if call.ended is not None:  # cut between two reads: the reply is not whole
            self.close_connection = True
            if call.ended == "timeout":
                proxy.errors.append(
                    f"the model endpoint's reply took longer than the request timeout ({proxy.timeout:g}s)"
                )
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _reply_error(self, status: int, message: str) -> None:
        """An error body every protocol's client can read (Anthropic, OpenAI and Gemini shapes at once)."""
        kind = "invalid_request_error" if status == 400 else "api_error"
        data = json.dumps(
            {
                "type": "error",
                "error": {
                    "type": kind,
                    "message": message,
                    "code": status,
                    "status": "INVALID_ARGUMENT" if status == 400 else "UNAVAILABLE",
                },
            }
        ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = _forward


def _seconds(value: str | None) -> float | None:
    try:
        return max(float(value), 0.0) if value else None
    except ValueError:
        return None


def _json(body: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(body) if body else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None
