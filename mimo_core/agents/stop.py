"""The one event an agent and its model client watch: set when the run is stopped (Ctrl-C, SIGTERM) or
when the agent's wall-clock time (`agent.time_limit`) is up, whatever the agent is doing then.

Everything that waits in a rollout (a model call in flight, the pause between retries, a CLI agent's
recording proxy) already gives up the moment its cancel event is set; making the time limit one more
way of setting it means the limit ends a model call that is still receiving, not only the next step.
`timed_out` tells the two apart, so the rollout records `time_limit` rather than `interrupted`.
"""

from __future__ import annotations

import threading
import time

from mimo_core.status import ExitStatus


class AgentStop(threading.Event):
    """An Event that is also set by the run's `cancel` and, after `seconds` (0: never), by the clock.
    Checked by polling (`is_set`, `wait`): no timer thread per rollout."""

    POLL_S = 0.05

    def __init__(self, cancel: threading.Event | None = None, seconds: float = 0.0) -> None:
        super().__init__()
        self.cancel = cancel
        self.deadline = time.monotonic() + seconds if seconds and seconds > 0 else None
        self._pauses = 0  # calls waiting for their endpoint's budget (models/endpoint_budget.py)
        self._paused_at = 0.0
        self._pause_lock = threading.Lock()
        self.paused_s = 0.0  # the clock stood still this long: the time limit does not count it

    def pause_clock(self) -> None:
        with self._pause_lock:
            if self._pauses == 0:
                self._paused_at = time.monotonic()
            self._pauses += 1

    def resume_clock(self) -> None:
        with self._pause_lock:
            self._pauses -= 1
            if self._pauses == 0:
                gap = time.monotonic() - self._paused_at
                self.paused_s += gap
                if self.deadline is not None:
                    self.deadline += gap

    @property
    def timed_out(self) -> bool:
        return self.deadline is not None and not self._pauses and time.monotonic() >= self.deadline

    @property
    def interrupted(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def is_set(self) -> bool:
        return super().is_set() or self.interrupted or self.timed_out

    def remaining(self) -> float | None:
        """Seconds left of the time limit (None: none); while the clock is paused, as many as at the pause."""
        if self.deadline is None:
            return None
        now = self._paused_at if self._pauses else time.monotonic()
        return max(self.deadline - now, 0.0)

    def wait(self, timeout: float | None = None) -> bool:
        end = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return False
            super().wait(self.POLL_S if left is None else min(self.POLL_S, left))
        return True


def stopped_status(stop: threading.Event | None) -> ExitStatus | None:
    """Why `stop` is set: the run was stopped (`interrupted`, which wins), the time is up (`time_limit`),
    or None when it is not set."""
    if stop is None or not stop.is_set():
        return None
    if isinstance(stop, AgentStop) and stop.timed_out and not stop.interrupted:
        return ExitStatus.TIME_LIMIT
    return ExitStatus.INTERRUPTED
