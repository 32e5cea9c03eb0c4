"""A recording proxy on loopback between a CLI agent and its model endpoint.

A third-party CLI is a black box, but its model calls are not: pointed at this proxy instead of the
endpoint, every request and response passes through here unchanged (streams are forwarded chunk by
chunk as they arrive) and a copy of each call, with the stream reassembled into one response, is handed
to the rollout's recorder as a training sample. Only bodies are recorded: headers and query strings,
where keys travel, never are.
"""

from __future__ import annotations

import http.client
import itertools
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from mimo_core.agents.cli.streams import protocol_of, reassemble, usage_of
from mimo_core.config import PricingConfig
from mimo_core.loopback_server import LoopbackServer
from mimo_core.models._common import compute_cost
from mimo_core.models.base import Usage
from mimo_core.trajectory import CallRecord

Sink = Callable[[int, dict[str, Any], dict[str, Any], str], None]  # step, request, response, request as sent
_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "host", "accept-encoding",
                  "content-encoding", "proxy-connection", "te", "trailer", "upgrade"})


class RecordingProxy(LoopbackServer):
    """Forwards every request to `upstream` (its path appended to the upstream base URL) and records it."""

    def __init__(self, upstream: str, sink: Sink, pricing: PricingConfig | None = None,
                 bind: str = "127.0.0.1", timeout: float = 600.0, cost_limit: float = 0.0) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"model base URL {upstream!r} is not an http(s) URL")
        self.scheme, self.host, self.port = parts.scheme, parts.hostname, parts.port
        self.base_path = parts.path.rstrip("/")
        self.sink, self.pricing, self.bind, self.timeout = sink, pricing, bind, timeout
        self.cost_limit = cost_limit  # dollars; 0 = none. Past it, model calls are refused (400)
        self.over_budget = False
        self.calls: list[CallRecord] = []
        self.errors: list[str] = []
        self._steps = itertools.count(1)
        self._lock = threading.Lock()

    def start(self) -> RecordingProxy:
        self._serve(type("_ProxyHandler", (_Handler,), {"proxy": self}), self.bind, "cli-recording-proxy")
        return self

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
            for k in ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens"):
                setattr(total, k, getattr(total, k) + getattr(c.usage, k))
        return total

    def connection(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=self.timeout)

    def record(self, path: str, request: dict[str, Any], request_text: str, status: int, raw: bytes,
               is_stream: bool, latency: float) -> None:
        """Steps are numbered and handed over under one lock: the step files are deltas of each other."""
        protocol = protocol_of(path)
        response = reassemble(protocol, raw, is_stream)
        if status != 200:
            response = {"_http_status": status, **response}
        usage = usage_of(protocol, response) if status == 200 else Usage()
        with self._lock:
            step = next(self._steps)
            self.calls.append(CallRecord(step=step, usage=usage, latency_s=round(latency, 4),
                                         cost=compute_cost(usage, self.pricing), finish_reason=_finish(response)))
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
        start = time.monotonic()
        conn = proxy.connection()
        try:
            conn.request(self.command, proxy.base_path + self.path, body=body or None, headers=headers)
            upstream = conn.getresponse()
        except OSError as e:
            proxy.errors.append(f"{type(e).__name__}: {e}")
            self._reply_error(502, f"recording proxy: model endpoint unreachable: {type(e).__name__}")
            conn.close()
            return
        self.send_response(upstream.status)
        for k, v in upstream.getheaders():
            if k.lower() not in _HOP:
                self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        copy = bytearray()
        try:
            while chunk := upstream.read1(65536):
                copy += chunk
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True  # the CLI hung up mid-stream: still record what came
        finally:
            conn.close()
        request = _json(body)
        if self.command == "POST" and request is not None:
            is_stream = "text/event-stream" in (upstream.getheader("Content-Type") or "")
            proxy.record(self.path.split("?", 1)[0], request, body.decode("utf-8"), upstream.status, bytes(copy),
                         is_stream, time.monotonic() - start)

    def _reply_error(self, status: int, message: str) -> None:
        """An error body every protocol's client can read (Anthropic, OpenAI and Gemini shapes at once)."""
        kind = "invalid_request_error" if status == 400 else "api_error"
        data = json.dumps({"type": "error", "error": {"type": kind, "message": message, "code": status,
                                                      "status": "INVALID_ARGUMENT" if status == 400 else "UNAVAILABLE"}
                           }).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = _forward


def _json(body: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(body) if body else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None
