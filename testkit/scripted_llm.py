"""A scripted LLM endpoint on 127.0.0.1 speaking Chat Completions, Responses and Anthropic Messages.

Tests and benchmarks drive the real SDKs against it, so it has to be cheap per request (it runs at zero
latency in the overhead benchmark) and stateless per rollout (replies are chosen from the number of
assistant turns already in the request, so many concurrent rollouts can share one server).
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from mimo_core.agents.blackbox.loopback_server import LoopbackServer
from testkit import scripted_stream as ss
from testkit.scripted_limits import ServerLimits
from testkit.scripted_render import RENDER, error_body, gemini_route, render_responses
from testkit.scripted_reply import Reply, call, signature_for
from testkit.strict_requests import strict_error_reply, validation_error

__all__ = ["Reply", "Request", "Responder", "ScriptedLLM", "call", "signature_for", "turns"]

_PATHS = {
    "/v1/chat/completions": "chat",
    "/chat/completions": "chat",
    "/v1/responses": "responses",
    "/responses": "responses",
    "/v1/messages": "anthropic",
    "/messages": "anthropic",
}


@dataclass
class Request:
    protocol: str  # chat | responses | anthropic
    path: str
    body: dict[str, Any]
    headers: dict[str, str]  # lower-cased names
    raw: bytes = b""  # the body exactly as received

    @property
    def n_assistant_turns(self) -> int:
        return count_assistant_turns(self.protocol, self.body)


Responder = Callable[[Request], Reply]


def count_assistant_turns(protocol: str, body: dict[str, Any]) -> int:
    if protocol == "responses":
        items = body.get("input")
        if not isinstance(items, list):
            return 0
        turns, in_assistant = 0, False
        for item in items:
            is_assistant = item.get("role") == "assistant" or item.get("type") in ("reasoning", "function_call")
            if is_assistant and not in_assistant:
                turns += 1
            in_assistant = is_assistant
        return turns
    if protocol == "gemini":
        return sum(1 for c in body.get("contents", ()) if c.get("role") == "model")
    return sum(1 for m in body.get("messages", ()) if m.get("role") == "assistant")


def turns(*replies: Reply) -> Responder:
    """Reply number n to a request that already holds n assistant turns; past the end, repeat the last."""
    if not replies:
        raise ValueError("turns() needs at least one Reply")

    def responder(req: Request) -> Reply:
        return replies[min(req.n_assistant_turns, len(replies) - 1)]

    return responder


@dataclass
class _Injection:
    status: int
    times: int
    retry_after: float | None
    body: dict[str, Any] | None
    delay: float
    headers: dict[str, str] | None
    raw: bytes | None = None  # a body sent as is (e.g. a proxy's HTML page), with `content_type`
    content_type: str = "application/json"


def random_fault(rng: random.Random, hang_s: float) -> _Injection:
    kind = rng.choice(("500", "429", "html", "hang"))
    if kind == "html":
        return _Injection(200, 1, None, None, 0.0, None, b"<html><body>502 Bad Gateway</body></html>", "text/html")
    if kind == "hang":
        return _Injection(0, 1, None, None, hang_s, None)
    return _Injection(int(kind), 1, 0.01 if kind == "429" else None, None, 0.0, None)


class ScriptedLLM(LoopbackServer):
    """A threaded HTTP server answering with the replies a responder picks. Use as a context manager."""

    def __init__(self, responder: Responder | None = None, latency: float = 0.0, strict: bool = False):
        """`strict`: validate request bodies as strict servers do (strict_requests.py); rejections are
        answered as those servers answer and listed in `rejected`."""
        self.responder: Responder = responder or turns(Reply(content="ok"))
        self.latency = latency
        self.strict = strict
        self.rejected: list[str] = []
        self.requests: list[Request] = []
        self.sent: list[dict[str, Any]] = []  # every 200 reply body, in the order sent (not streamed ones)
        self._lock = threading.Lock()
        self._injections: list[_Injection] = []
        self._chaos: tuple[random.Random, float, float] | None = None
        self._ids = itertools.count(1)
        self.limits: ServerLimits | None = None  # rate limits as the providers answer them (scripted_limits.py)

    # lifecycle (start/stop/with: LoopbackServer) -------------------------------------------------------
    def start(self) -> ScriptedLLM:
        self._serve(type("_BoundHandler", (_Handler,), {"llm": self}), "127.0.0.1", "scripted-llm")
        return self

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    # scripting -----------------------------------------------------------------------------------------
    def set_responder(self, fn: Responder) -> None:
        self.responder = fn

    def inject(
        self,
        status: int,
        times: int = 1,
        retry_after: float | None = None,
        body: dict[str, Any] | None = None,
        delay: float = 0.0,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
        content_type: str = "application/json",
    ) -> None:
        """Make the next `times` requests fail with `status` (status 0 + delay: hang, then answer normally).
        `raw` sends those bytes as the body instead (e.g. status 200 with an HTML page)."""
        with self._lock:
            self._injections.append(_Injection(status, times, retry_after, body, delay, headers, raw, content_type))

    def rate_limit(self, **kwargs: Any) -> ServerLimits:
        """Limit concurrency and requests per window like a provider (`ServerLimits`'s fields)."""
        self.limits = ServerLimits(**kwargs)
        return self.limits

    def chaos(self, rate: float, seed: int = 0, hang_s: float = 2.0) -> None:
        """Fail a random `rate` of requests (seeded) with a 500, a 429, an HTML page with status 200, or a
        hang of `hang_s` (past a short client timeout): the soak test's and the bench's fault mix."""
        self._chaos = (random.Random(seed), rate, hang_s)

    def _take_injection(self) -> _Injection | None:
        with self._lock:
            if self._chaos is not None:
                rng, rate, hang = self._chaos
                if rng.random() < rate:
                    return random_fault(rng, hang)
            if not self._injections:
                return None
            inj = self._injections[0]
            inj.times -= 1
            if inj.times <= 0:
                self._injections.pop(0)
            return inj

    def _record(self, req: Request) -> None:
        with self._lock:
            self.requests.append(req)

    def next_id(self) -> int:
        return next(self._ids)


class _Handler(BaseHTTPRequestHandler):
    llm: ScriptedLLM
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    disable_nagle_algorithm = True  # else header and body segments meet delayed ACKs: +40 ms per call
    wbufsize = -1  # buffer headers + body into one write; flushed by handle_one_request

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(
        self,
        status: int,
        payload: dict[str, Any] | bytes,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        self._release_slot()
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _release_slot(self) -> None:
        """The reply is ready: its rate-limit slot is given back before it is written."""
        if getattr(self, "_slot", None) is not None:
            self._slot.release()
            self._slot = None

    def do_POST(self) -> None:
        self._slot: ServerLimits | None = None
        try:
            self._post()
        finally:
            self._release_slot()

    def _post(self) -> None:
        llm = self.llm
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        path = self.path.split("?", 1)[0]
        protocol = _PATHS.get(path) or gemini_route(path)
        stream_path = path.endswith(":streamGenerateContent")
        if protocol is None:
            self._send(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._send(400, error_body(protocol, 400, "request body is not JSON"))
            return
        req = Request(protocol, path, body, {k.lower(): v for k, v in self.headers.items()}, raw)
        llm._record(req)
        if llm.limits is not None:
            refusal = llm.limits.admit()
            if refusal is not None:
                self._send(*refusal)
                return
            self._slot = llm.limits
        inj = llm._take_injection()
        if inj is not None:
            if inj.delay > 0:
                time.sleep(inj.delay)
            if inj.status:
                headers = dict(inj.headers or {})
                if inj.retry_after is not None:
                    headers["retry-after"] = f"{inj.retry_after:g}"
                payload = inj.raw if inj.raw is not None else inj.body or error_body(protocol, inj.status)
                self._send(inj.status, payload, headers, inj.content_type)
                return
        if llm.latency > 0:
            time.sleep(llm.latency)
        if llm.strict and (problem := validation_error(protocol, body)) is not None:
            with llm._lock:
                llm.rejected.append(problem)
            self._send(*strict_error_reply(protocol, problem))
            return
        if protocol == "anthropic":
            bad = _bad_signature(body)
            if bad:
                self._send(400, error_body(protocol, 400, bad))
                return
        try:
            reply = llm.responder(req)
        except Exception as e:  # a broken responder should fail the test loudly, not hang the client
            self._send(500, error_body(protocol, 500, f"responder raised {type(e).__name__}: {e}"))
            return
        n = llm.next_id()
        if body.get("stream") or stream_path:
            self._send_stream(protocol, reply, body, n)
            return
        out = RENDER[protocol](reply, body, n)
        with llm._lock:
            llm.sent.append(out)
        self._send(200, out)

    def _send_stream(self, protocol: str, reply: Reply, body: dict[str, Any], n: int) -> None:
        """Server-sent events with chunked encoding, as the streaming APIs send them (scripted_stream.py)."""
        self._release_slot()
        frames = {
            "anthropic": lambda: ss.anthropic_events(reply, body, n),
            "chat": lambda: ss.chat_events(reply, body, n),
            "responses": lambda: ss.responses_events(reply, body, n, render_responses(reply, body, n)),
            "gemini": lambda: ss.gemini_events(reply, body, n),
        }[protocol]()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for frame in frames:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
        self.wfile.write(b"0\r\n\r\n")


def _bad_signature(body: dict[str, Any]) -> str | None:
    for m in body.get("messages", ()):
        if m.get("role") != "assistant" or not isinstance(m.get("content"), list):
            continue
        for block in m["content"]:
            if block.get("type") == "thinking" and block.get("signature") != signature_for(block.get("thinking", "")):
                return "messages: invalid signature in thinking block"
    return None
