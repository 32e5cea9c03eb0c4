"""Live recording (opt-in, MIMOAGENT_DAGSTER_LIVE=1): the CLI sends its run to the warm recorder
(recorder.py) while it goes, so partitions appear in the UI as their rollouts finish rather than after
the run. A writer thread connects (starting the recorder when none is listening) and feeds it; `finish`
waits for the tail at most MIMOAGENT_DAGSTER_WAIT seconds (0.5 by default)."""

from __future__ import annotations

import queue
import sys
import threading
import time
from pathlib import Path
from typing import Any

from mimo_assets.cli_recording.feed import END_OF_RUN, RecordingHeader
from mimo_assets.cli_recording.link import RecorderLink, RecordingError
from mimo_core.records.results import ResultRecord
from mimo_core.settings import RecordingSettings

_END = object()
WAIT_LINE = "seconds waited for recording after the rollouts:"
WAIT_ENV = RecordingSettings.variable("wait_s")


def wait_limit() -> float | None:
    """Seconds the CLI waits at exit for the recording to finish ($MIMOAGENT_DAGSTER_WAIT, default 0.5;
    `all` = until recorded). After that the recorder finishes on its own: the results are already
    on disk and the run shows as in progress in the UI until it is done."""
    return RecordingSettings.read().wait_s


class LiveRecording:
    def __init__(self, log: Path):
        self.log = log  # the run's dagster_record.log
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.writer: threading.Thread | None = None
        self.link: RecorderLink | None = None
        self.error: str | None = None  # why nothing could be sent (the recorder did not start)

    def start(self, header: RecordingHeader) -> None:
        self.queue.put(header.model_dump_json())
        self.writer = threading.Thread(target=self._write, name="mimo-dagster-writer", daemon=True)
        self.writer.start()

    def record(self, record: ResultRecord) -> None:
        if self.writer is not None:
            self.queue.put(record)

    def finish(self) -> None:
        if self.writer is None:
            return
        self.queue.put(_END)
        t0 = time.monotonic()
        self.writer.join()
        if self.link is None:
            self._note(f"not recorded live: {self.error}")
            print(
                f"mimoagent: dagster: not recorded live ({self.error}); Dagster records the run from its "
                f"results.jsonl instead (log: {self.log})",
                file=sys.stderr,
            )
            return
        limit = wait_limit()
        reply = self.link.result(None if limit is None else max(0.0, limit - (time.monotonic() - t0)))
        waited = time.monotonic() - t0
        if reply is None:
            self._note(f"{WAIT_LINE} {waited:.3f} (then left recording in the background)")
            print(
                f"mimoagent: dagster: recording finishes in the background (recorder log: {self.link.log})",
                file=sys.stderr,
            )
            return
        self._note(f"{WAIT_LINE} {waited:.3f}")  # the figure bench/bench_dagster.py reports
        self._note(f"recorded by pid {self.link.pid}: {reply}")
        if reply != "ok":
            print(
                f"mimoagent: dagster: not recorded: {reply.removeprefix('error ')} (recorder log: {self.link.log})",
                file=sys.stderr,
            )
        elif waited > 2:
            print(f"mimoagent: dagster: recording finished {waited:.1f}s after the rollouts", file=sys.stderr)

    def _note(self, line: str) -> None:
        with open(self.log, "a") as log:
            log.write(line + "\n")

    def _write(self) -> None:
        """The only thread touching the connection: a slow recorder blocks it, never a rollout worker."""
        try:
            self.link = RecorderLink.open()
            how = f"started recorder pid {self.link.started}" if self.link.started else "a warm recorder"
            self._note(f"recording through {how}, log: {self.link.log}")
        except RecordingError as e:
            self.error = str(e)
        try:
            while (item := self.queue.get()) is not _END:
                if self.link is not None:
                    self.link.send(item if isinstance(item, str) else item.model_dump_json())
            if self.link is not None:
                self.link.send(END_OF_RUN)
                self.link.end_input()
        except OSError:  # the recorder died; finish() reports it
            while self.queue.get() is not _END:
                pass
