"""Hand-off between a CLI run's worker threads and the in-process Dagster step that records them."""

from __future__ import annotations

import queue
import threading
import uuid
from collections.abc import Iterator
from typing import Any

from mimo_core.results import ResultRecord

_FEEDS: dict[str, Feed] = {}
_LOCK = threading.Lock()
_END = object()


class Feed:
    def __init__(self, request: dict[str, Any], planned: list[tuple[str, str, int]]):
        self.id = uuid.uuid4().hex
        self.request = request
        self.planned = planned
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._ended = False
        with _LOCK:
            _FEEDS[self.id] = self

    def put(self, record: ResultRecord) -> None:
        self._queue.put(record)

    def close(self) -> None:
        self._queue.put(_END)

    def __iter__(self) -> Iterator[ResultRecord]:
        """Records until `close`; iterating again after the end yields nothing (never blocks)."""
        while not self._ended:
            item = self._queue.get()
            if item is _END:
                self._ended = True
                with _LOCK:
                    _FEEDS.pop(self.id, None)
                return
            yield item


def get_feed(feed_id: str) -> Feed:
    with _LOCK:
        feed = _FEEDS.get(feed_id)
    if feed is None:
        raise KeyError(f"no CLI feed {feed_id!r} in this process: record mode only runs inside a mimoagent CLI run")
    return feed
