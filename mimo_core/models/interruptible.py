"""Run a blocking call so that the calling thread can give up on it the moment a cancel event is set.

Each calling thread (a rollout) keeps one helper daemon thread and hands it its calls through a queue:
cheaper per call than starting a thread, and a call given up on (Ctrl-C while the server sits on the
request) just leaves its helper behind to finish on its own; being a daemon, it never holds the exit.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

POLL_S = 0.1  # how often a waiting caller looks at its cancel event


class Cancelled(Exception):
    """The cancel event was set before the call returned."""


class _Helper:
    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[tuple[Callable[[], Any], list[Any], threading.Event]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="model-call", daemon=True).start()

    def _serve(self) -> None:
        while True:
            fn, box, done = self.jobs.get()
            try:
                box.append((True, fn()))
            except BaseException as e:
                box.append((False, e))
            done.set()


_local = threading.local()


def call_interruptibly(fn: Callable[[], Any], cancel: threading.Event) -> Any:
    """`fn()`, or Cancelled as soon as `cancel` is set (checked every POLL_S)."""
    if cancel.is_set():
        raise Cancelled
    helper = getattr(_local, "helper", None)
    if helper is None:
        helper = _local.helper = _Helper()
    box: list[Any] = []
    done = threading.Event()
    helper.jobs.put((fn, box, done))
    while not done.wait(POLL_S):
        if cancel.is_set():
            _local.helper = None  # this one is still busy with the abandoned call
            raise Cancelled
    ok, value = box[0]
    if not ok:
        raise value
    return value
