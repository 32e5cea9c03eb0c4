"""Model calls that end in time, whatever the server does: the request timeout bounds the WHOLE response,
and a cancel (Ctrl-C, SIGTERM, `agent.time_limit`) closes the connection of a call in flight.

The SDKs' timeouts bound each socket read, not the response: a server that sends one byte every two
seconds, stalls after its headers, or streams without end keeps a call going for ever under a 5 s
timeout. The SDK clients are therefore given an HTTP transport whose sockets know the call they serve:
every read and write waits at most until the call's deadline, in slices short enough to notice a
cancel, and then fails like any read timeout (so the SDK raises its timeout error and our retry policy
applies). Closing the socket is what tells the server to stop generating: llama.cpp and vLLM cancel a
request whose client went away.

The call's deadline and cancel event live in a thread-local set around each post (`bounded`), so one
shared client (and its connection pool) serves every rollout of the process.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
from collections.abc import Iterator
from typing import Any

SLICE_S = 0.25  # longest single wait on a socket while a call is bounded: how soon a cancel is seen

_call = threading.local()  # .deadline (monotonic s), .cancel (Event | None), .limit (s, for the message)


@contextlib.contextmanager
def bounded(seconds: float, cancel: threading.Event | None) -> Iterator[None]:
    """The calls made on this thread inside this block end by `seconds` from now, or at `cancel`."""
    _call.deadline, _call.cancel, _call.limit = time.monotonic() + seconds, cancel, seconds
    try:
        yield
    finally:
        _call.deadline = _call.cancel = None


def http_modules() -> tuple[Any, Any]:
    """(httpx, httpcore) as the installed SDKs use them: the `httpx2` fork where present."""
    for pair in (("httpx2", "httpcore2"), ("httpx", "httpcore")):
        try:
            return importlib.import_module(pair[0]), importlib.import_module(pair[1])
        except ImportError:
            continue
    raise ImportError("neither httpx2 nor httpx is installed (the openai and anthropic SDKs need one)")


def _budget(timeout: float | None, started: float, timeout_exc: type[Exception]) -> float | None:
    """How long the next socket wait may last; raises `timeout_exc` when the call is over its time."""
    deadline = getattr(_call, "deadline", None)
    if deadline is None:
        return timeout
    cancel = _call.cancel
    if cancel is not None and cancel.is_set():
        raise timeout_exc("the call was cancelled")
    now = time.monotonic()
    if now >= deadline:
        raise timeout_exc(f"the whole response took longer than the request timeout ({_call.limit:g}s)")
    if timeout is not None and now - started >= timeout:
        raise timeout_exc(f"no data for {timeout:g}s")
    left = [deadline - now, SLICE_S] + ([timeout - (now - started)] if timeout is not None else [])
    return max(min(left), 0.001)


def bounded_client_kwargs(sdk: Any) -> dict[str, Any]:
    """`http_client=` for an SDK client (openai / anthropic module), with that SDK's own defaults."""
    httpx, _ = http_modules()
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
    return {"http_client": sdk.DefaultHttpxClient(transport=BoundedTransport.make(limits))}


class BoundedTransport:
    """Builds the SDK's own HTTP transport, with a connection pool whose network backend is bounded."""

    @staticmethod
    def make(limits: Any) -> Any:
        httpx, httpcore = http_modules()
        transport = httpx.HTTPTransport(limits=limits)
        old = transport._pool
        transport._pool = httpcore.ConnectionPool(
            ssl_context=old._ssl_context,
            max_connections=old._max_connections,
            max_keepalive_connections=old._max_keepalive_connections,
            keepalive_expiry=old._keepalive_expiry,
            http1=old._http1,
            http2=old._http2,
            network_backend=_backend_class(httpcore)(),
        )
        return transport


_backend_classes: dict[str, type] = {}


def _backend_class(httpcore: Any) -> type:
    """The bounded backend and stream, subclassing this httpcore's own interfaces (built once)."""
    if httpcore.__name__ in _backend_classes:
        return _backend_classes[httpcore.__name__]

    class Stream(httpcore.NetworkStream):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            started = time.monotonic()
            while True:
                wait = _budget(timeout, started, httpcore.ReadTimeout)
                try:
                    return self.inner.read(max_bytes, wait)
                except httpcore.ReadTimeout:
                    if getattr(_call, "deadline", None) is None:
                        raise  # unbounded call: the SDK's own read timeout, as before

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            deadline = getattr(_call, "deadline", None)
            if deadline is not None:
                left = max(deadline - time.monotonic(), 0.001)
                timeout = left if timeout is None else min(timeout, left)
            self.inner.write(buffer, timeout)

        def close(self) -> None:
            self.inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
            return Stream(self.inner.start_tls(ssl_context, server_hostname, timeout))

        def get_extra_info(self, info: str) -> Any:
            return self.inner.get_extra_info(info)

    class Backend(httpcore.NetworkBackend):
        def __init__(self) -> None:
            self.inner = httpcore.SyncBackend()

        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> Any:
            return Stream(self.inner.connect_tcp(host, port, _capped(timeout), local_address, socket_options))

        def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
            return Stream(self.inner.connect_unix_socket(path, _capped(timeout), socket_options))

        def sleep(self, seconds: float) -> None:
            self.inner.sleep(seconds)

    _backend_classes[httpcore.__name__] = Backend
    return Backend


def _capped(timeout: float | None) -> float | None:
    deadline = getattr(_call, "deadline", None)
    if deadline is None:
        return timeout
    left = max(deadline - time.monotonic(), 0.001)
    return left if timeout is None else min(timeout, left)
