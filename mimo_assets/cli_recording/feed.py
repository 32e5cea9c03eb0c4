"""Hand-off between a CLI run's finished records (read from the pipe) and the in-process Dagster step
that records them. The step receives it as the `cli_feed` resource of that one run."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any

from mimo_core.results import ResultRecord

_END = object()


class Feed:
    def __init__(self, request: dict[str, Any], planned: list[tuple[str, str, int]]):
        self.request = request
        self.planned = planned
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._ended = False

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
                return
            yield item
