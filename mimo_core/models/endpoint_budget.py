"""One budget per model endpoint, shared by every rollout of the process: concurrency, requests and tokens
per minute, and an adaptive concurrency that follows the endpoint's own overload signals.

Every model call (the default agent's, the judge's, a CLI agent's through the recording proxy) takes a
slot of its endpoint's budget (`EndpointBudget.acquire`) and gives it back with what happened
(`release`). The endpoint is its base URL and model name (`endpoint_key`), so every config and the judge
pointing at the same endpoint share one budget. A model block sets `max_concurrency`,
`requests_per_minute` and `tokens_per_minute` (docs/models.md); where several blocks name limits for one
endpoint, the strictest wins.

Concurrency is adaptive (AIMD): it starts at `max_concurrency` (or `START` when none is set), grows by
one slot per window of successful calls while the limit is what holds calls back, and is cut to 3/4 on an
overload (HTTP 429, 503, 529) — once per round of calls: a call started before the last cut does not cut again.
A `Retry-After` holds every new call of the endpoint until it has passed. Requests per minute are spaced
evenly (one start every 60/rpm s), which keeps under any window a provider counts in; tokens per minute
are a bucket refilled continuously, charged the request's estimate before the call and the usage the
endpoint reported after it. Waiting is cut short by the caller's stop events and pauses an `AgentStop`'s
clock (`agent.time_limit` does not count it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from mimo_core.config import ModelConfig
from mimo_core.errors import ModelInterrupted

START = 4  # adaptive concurrency's first limit when the model block sets none
CEILING = 1024  # ... and the most it grows to
BACKOFF = 0.75  # an overload cuts the adaptive limit to this share (one cut per round of calls)
POLL_S = 0.05  # how often a waiting call looks at its stop events
MAX_HOLD_S = 60.0  # the longest a Retry-After holds the endpoint
OVERLOAD_STATUSES = frozenset({429, 503, 529})


def endpoint_key(cfg: ModelConfig) -> str:
    from mimo_core.models.endpoint import base_url

    return f"{base_url(cfg).rstrip('/')} {cfg.model_name}"


def endpoint_label(cfg: ModelConfig) -> str:
    """What the progress line calls it: host[:port] and model, never a URL's userinfo or query."""
    from mimo_core.models.endpoint import endpoint_host

    return f"{endpoint_host(cfg) or '?'}/{cfg.model_name}"


@dataclass
class Ticket:
    """One call's slot: when it was granted, how long the call waited for it, the tokens charged."""

    started: float
    waited_s: float
    estimate: int


@dataclass
class BudgetStats:
    calls: int = 0
    waits: int = 0  # calls that had to wait for a slot
    wait_s: float = 0.0
    overloads: int = 0  # 429 / 503 / 529 answers


@dataclass
class EndpointBudget:
    key: str
    max_concurrency: int | None = None
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    max_hold_s: float = MAX_HOLD_S  # the longest a Retry-After holds the endpoint (the blocks' retry.max_delay)
    label: str = ""  # for people: host and model (endpoint_label)
    clock: Callable[[], float] = time.monotonic
    limit: float = 0.0
    in_flight: int = 0
    waiting: int = 0
    stats: BudgetStats = field(default_factory=BudgetStats)

    def __post_init__(self) -> None:
        self._cond = threading.Condition()
        self.limit = float(self.max_concurrency or START)
        self._held_until = 0.0
        self._next_start = 0.0
        self._last_cut = -1.0
        self._tokens = float(self.tokens_per_minute or 0)
        self._tokens_at = self._now()

    def _now(self) -> float:
        return self.clock()

    @property
    def ceiling(self) -> int:
        return self.max_concurrency or CEILING

    def tighten(self, cfg: ModelConfig) -> None:
        """Another model block for this endpoint: the strictest of each limit wins."""
        with self._cond:
            self.max_hold_s = min(self.max_hold_s, cfg.retry.max_delay)
            if cfg.max_concurrency and (not self.max_concurrency or cfg.max_concurrency < self.max_concurrency):
                self.max_concurrency = cfg.max_concurrency
                self.limit = min(self.limit, float(cfg.max_concurrency))
            for name in ("requests_per_minute", "tokens_per_minute"):
                new, old = getattr(cfg, name), getattr(self, name)
                if new and (not old or new < old):
                    setattr(self, name, float(new))
                    if name == "tokens_per_minute":
                        self._tokens = min(self._tokens, float(new)) if old else float(new)

    def _refill(self, now: float) -> None:
        if self.tokens_per_minute:
            rate = self.tokens_per_minute / 60.0
            self._tokens = min(self._tokens + (now - self._tokens_at) * rate, self.tokens_per_minute)
        self._tokens_at = now

    def _delay(self, now: float, estimate: int) -> float | None:
        """0: the call may start now; seconds until it may; None: when a slot is given back."""
        if now < self._held_until:
            return self._held_until - now
        if self.in_flight >= max(int(self.limit), 1):
            return None
        if self.requests_per_minute and now < self._next_start:
            return self._next_start - now
        if self.tokens_per_minute:
            self._refill(now)
            need = min(estimate, self.tokens_per_minute)
            if self._tokens < need:
                return (need - self._tokens) / (self.tokens_per_minute / 60.0)
        return 0.0

    def acquire(self, stops: Iterable[threading.Event | None] = (), estimate: int = 0) -> Ticket:
        """A slot for one call; ModelInterrupted as soon as any of `stops` is set."""
        events = [e for e in stops if e is not None]
        t0 = self._now()
        with self._cond:
            delay = self._delay(t0, estimate)
            had_to_wait = delay != 0.0
            if had_to_wait:
                with _paused(events):
                    self.waiting += 1
                    try:
                        while delay != 0.0:
                            if any(e.is_set() for e in events):
                                raise ModelInterrupted(f"endpoint {self.key}: stopped while waiting for its budget")
                            self._cond.wait(POLL_S if delay is None else min(delay, POLL_S))
                            delay = self._delay(self._now(), estimate)
                    finally:
                        self.waiting -= 1
            now = self._now()
            self.in_flight += 1
            if self.requests_per_minute:
                self._next_start = max(now, self._next_start) + 60.0 / self.requests_per_minute
            if self.tokens_per_minute:
                self._tokens -= estimate
            waited = now - t0 if had_to_wait else 0.0
            self.stats.calls += 1
            if had_to_wait:
                self.stats.waits += 1
                self.stats.wait_s += waited
            return Ticket(started=now, waited_s=waited, estimate=estimate)

    def release(self, ticket: Ticket, status: int | None = 200, retry_after: float | None = None) -> None:
        """The call is over: `status` its HTTP status (None: no answer), `retry_after` what the server asked."""
        with self._cond:
            now = self._now()
            self.in_flight -= 1
            if status in OVERLOAD_STATUSES:
                self.stats.overloads += 1
                if ticket.started >= self._last_cut:  # one cut per round of calls
                    self.limit = max(self.limit * BACKOFF, 1.0)
                    self._last_cut = now
                if retry_after:
                    self._held_until = max(self._held_until, now + min(retry_after, self.max_hold_s))
            elif (
                status is not None
                and status < 400
                and ticket.started >= self._last_cut  # what the old round saw says nothing of the new limit
                and (self.waiting or self.in_flight + 1 >= int(self.limit))  # the limit is what holds calls back
            ):
                self.limit = min(self.limit + 1.0 / max(self.limit, 1.0), float(self.ceiling))
            self._cond.notify_all()

    def charge(self, tokens: int, ticket: Ticket) -> None:
        """The tokens the endpoint counted for a call, in place of the estimate charged at its start."""
        if self.tokens_per_minute:
            with self._cond:
                self._tokens -= tokens - ticket.estimate

    def snapshot(self) -> dict[str, float | int | str]:
        with self._cond:
            return {
                "endpoint": self.label or self.key,
                "adaptive": int(not self.max_concurrency),
                "in_flight": self.in_flight,
                "limit": max(int(self.limit), 1),
                "waiting": self.waiting,
                "waits": self.stats.waits,
                "wait_s": round(self.stats.wait_s, 3),
                "overloads": self.stats.overloads,
                "calls": self.stats.calls,
            }


@runtime_checkable
class _Clock(Protocol):
    """A stop event whose time limit can stand still: `AgentStop` (agents/stop.py)."""

    def pause_clock(self) -> None: ...

    def resume_clock(self) -> None: ...


class _paused:
    """While a call waits for its budget, an `AgentStop`'s clock stands still (agents/stop.py)."""

    def __init__(self, events: list[threading.Event]) -> None:
        self.clocks = [e for e in events if isinstance(e, _Clock)]

    def __enter__(self) -> None:
        for e in self.clocks:
            e.pause_clock()

    def __exit__(self, *exc: object) -> None:
        for e in self.clocks:
            e.resume_clock()


_budgets: dict[str, EndpointBudget] = {}
_lock = threading.Lock()


def budget_for(cfg: ModelConfig) -> EndpointBudget:
    """The process's one budget for `cfg`'s endpoint (made on first use; later blocks may tighten it)."""
    key = endpoint_key(cfg)
    with _lock:
        budget = _budgets.get(key)
        if budget is None:
            budget = _budgets[key] = EndpointBudget(
                key,
                max_concurrency=cfg.max_concurrency,
                requests_per_minute=cfg.requests_per_minute,
                tokens_per_minute=cfg.tokens_per_minute,
                max_hold_s=min(MAX_HOLD_S, cfg.retry.max_delay),
                label=endpoint_label(cfg),
            )
            return budget
    budget.tighten(cfg)
    return budget


def budgets() -> list[EndpointBudget]:
    with _lock:
        return list(_budgets.values())
