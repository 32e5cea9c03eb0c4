"""Hand-off between a CLI run's finished records (read from the pipe) and the in-process Dagster step
that records them. The step receives it as the `cli_feed` resource of that one run."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from mimo_assets.input_versions import ConfigFile, RecordedDataset
from mimo_core.records.results import ResultRecord
from mimo_core.run.plan import RunRequest

_END = object()
# The CLI's last line when it finished normally; end of input without it means the CLI died (SIGKILL).
END_OF_RUN = "end-of-run"


class RecordingHeader(BaseModel):
    """The first line the recorder reads from a CLI run: its request, what it planned, and its inputs as it
    ran them (so the recording loads neither the dataset nor the config files again)."""

    request: RunRequest
    config_names: list[str]
    instance_ids: list[str]  # the selected rows (finished rollouts of theirs an earlier run never recorded count)
    planned: list[tuple[str, str, int]]  # (instance_id, config_name, k) of every rollout to run
    # None in an entry written before these were recorded: the recording loads the dataset and reads the files.
    dataset: RecordedDataset | None = None  # every row of the dataset, as the run loaded it
    config_files: dict[str, ConfigFile] | None = None  # the config files, as the run read them


class Feed:
    def __init__(self, header: RecordingHeader):
        self.header = header
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._ended = False
        self.complete = False  # the CLI said it finished (END_OF_RUN) before its input ended

    @property
    def n_planned(self) -> int:
        return len(self.header.planned)

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
