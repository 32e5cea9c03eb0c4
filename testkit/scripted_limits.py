"""The scripted server's rate limits, answered as the providers answer them.

A concurrency cap and a requests-per-window limit (a sliding window: `window_s` seconds, 60 for a
provider's per-minute limit, shorter in tests). Past either, a request is refused at once: OpenAI's way is
HTTP 429 `rate_limit_exceeded` with `retry-after` and `x-ratelimit-*` headers; Anthropic's is HTTP 529
`overloaded_error` past the concurrency cap and 429 `rate_limit_error` with `retry-after` past the rate.
A request holds its slot until its reply is ready (released before the reply is written, so a client that
starts its next call on receiving one is never counted twice). `max_seen` is the most requests in flight
at once; `refused` counts the refusals; `fail(rate, calls)` also fails a random share of the next calls
with HTTP 500, the flaky endpoint the run's `--retries` is tested against.
"""

from __future__ import annotations

import collections
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

Refusal = tuple[int, dict[str, Any], dict[str, str]]


@dataclass
class ServerLimits:
    max_concurrency: int | None = None
    requests_per_window: int | None = None
    window_s: float = 60.0
    style: str = "openai"  # openai | anthropic
    retry_after: float = 0.05  # seconds the refusal asks for
    in_flight: int = 0
    max_seen: int = 0
    admitted: int = 0
    refused: int = 0
    failed: int = 0
    _starts: collections.deque[float] = field(default_factory=collections.deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _fail: tuple[random.Random, float, int] | None = None

    def fail(self, rate: float, calls: int, seed: int = 0) -> None:
        """Of the next `calls` admitted requests, fail a random `rate` of them with HTTP 500."""
        with self._lock:
            self._fail = (random.Random(seed), rate, calls)

    def admit(self) -> Refusal | None:
        """None: the request holds a slot now (give it back with `release`); else the refusal to send."""
        now = time.monotonic()
        with self._lock:
            while self._starts and self._starts[0] <= now - self.window_s:
                self._starts.popleft()
            if self.max_concurrency is not None and self.in_flight >= self.max_concurrency:
                self.refused += 1
                return self._refusal("concurrency")
            if self.requests_per_window is not None and len(self._starts) >= self.requests_per_window:
                self.refused += 1
                return self._refusal("requests")
            if self._fail is not None:
                rng, rate, left = self._fail
                self._fail = (rng, rate, left - 1) if left > 1 else None
                if rng.random() < rate:
                    self.failed += 1
                    return 500, {"error": {"message": "scripted flaky failure", "type": "server_error"}}, {}
            self._starts.append(now)
            self.in_flight += 1
            self.admitted += 1
            self.max_seen = max(self.max_seen, self.in_flight)
            return None

    def release(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _refusal(self, what: str) -> Refusal:
        headers = {"retry-after": f"{self.retry_after:g}"}
        if self.requests_per_window is not None:
            headers["x-ratelimit-limit-requests"] = str(self.requests_per_window)
            headers["x-ratelimit-remaining-requests"] = str(max(self.requests_per_window - len(self._starts), 0))
        if self.style == "anthropic":
            if what == "concurrency":
                return 529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, {}
            body = {"type": "error", "error": {"type": "rate_limit_error", "message": f"rate limit: {what}"}}
            return 429, body, headers
        body = {
            "error": {
                "message": f"Rate limit reached ({what}); please try again in {self.retry_after:g}s",
                "type": what,
                "code": "rate_limit_exceeded",
            }
        }
        return 429, body, headers
