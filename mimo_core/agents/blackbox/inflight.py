"""The recording proxy's calls in flight: each one's upstream connection, what has arrived so far, and a
watchdog that bounds the whole response.

A socket timeout bounds only the gap between two reads: an endpoint that sends one byte every few seconds,
or streams forever, would hold a call (and the CLI waiting on it) for ever. The watchdog shuts a call's
upstream socket down once the call is older than the request timeout, which ends any blocked read at once;
the proxy answers the CLI with what it can and records the call. When the proxy stops (the CLI exited, was
killed at its time limit, or the run was stopped), every call still in flight is recorded with what
arrived and its upstream socket is shut, so no handler outlives the rollout or writes into it later.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

WATCH_S = 0.2  # how often the watchdog looks at the calls in flight


@dataclass(eq=False)
class InFlight:
    path: str
    request: dict[str, Any] | None
    request_text: str
    start: float
    deadline: float
    conn: http.client.HTTPConnection | None = None
    status: int | None = None
    is_stream: bool = False
    received: bytearray = field(default_factory=bytearray)
    ended: str | None = None  # why it ended early: "timeout" | "stopped"
    recorded: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    wait_s: float = 0.0  # waited for the endpoint's budget before it was sent
    retry_after: str | None = None  # the endpoint's Retry-After, when it said one

    def abort(self, why: str) -> None:
        """Shut the upstream socket: a read blocked on it returns at once (the handler sees an error)."""
        with self.lock:
            if self.ended is None:
                self.ended = why
            conn = self.conn
        sock = getattr(conn, "sock", None) if conn is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def timed_out_by(self, error: BaseException) -> None:
        """A socket timeout (the gap between reads) may fire a moment before the watchdog: the same end."""
        if isinstance(error, TimeoutError) or time.monotonic() >= self.deadline:
            with self.lock:
                self.ended = self.ended or "timeout"

    def claim(self) -> bool:
        """True for the one caller that gets to record this call (the handler or the proxy's stop)."""
        with self.lock:
            if self.recorded:
                return False
            self.recorded = True
            return True


class Watchdog:
    """One thread per proxy: aborts calls past their deadline; `stop_all` aborts and records the rest."""

    def __init__(self) -> None:
        self.calls: set[InFlight] = set()
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="cli-proxy-watchdog", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def add(self, call: InFlight) -> None:
        with self.lock:
            self.calls.add(call)

    def remove(self, call: InFlight) -> None:
        with self.lock:
            self.calls.discard(call)

    def _watch(self) -> None:
        while not self.done.wait(WATCH_S):
            now = time.monotonic()
            with self.lock:
                late = [c for c in self.calls if now >= c.deadline and c.ended is None]
            for call in late:
                call.abort("timeout")

    def stop_all(self, record: Callable[[InFlight], None]) -> None:
        """Abort every call still in flight and record each (at most once) with what arrived."""
        self.done.set()
        with self.lock:
            left = list(self.calls)
            self.calls.clear()
        for call in left:
            call.abort("stopped")
            if call.claim():
                record(call)
