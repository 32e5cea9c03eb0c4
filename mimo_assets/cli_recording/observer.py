"""The CLI's door into the Dagster graph: a `mimoagent.observers` plug-in.

The CLI plans and runs rollouts itself, with no Dagster on its path. This observer turns the same run
into one in-process `evaluate` run in the shared instance, whose step logs each partition's
materializations as rollouts finish. That run lives in the recorder (`recorder`), a process of its own
kept warm between CLI runs: `import dagster` costs seconds and each stored event ~1 ms of CPU, which in a
thread would take the GIL from the rollouts. Here `start` only queues, `record` only queues (a writer
thread connects, starting the recorder when none is listening, and feeds it), and `finish` waits for the
tail, at most `wait_limit()` seconds (0.5 by default): the CLI should not wait seconds for bookkeeping.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mimo_assets.cli_recording.feed import END_OF_RUN, RecordingHeader
from mimo_assets.cli_recording.link import RecorderLink, RecordingError
from mimo_core.results import ResultRecord

if TYPE_CHECKING:
    from mimo_core.plan import RunPlan, RunRequest

_END = object()
LOG_FILE = "dagster_record.log"
WAIT_LINE = "seconds waited for recording after the rollouts:"


WAIT_ENV = "MIMOAGENT_DAGSTER_WAIT"
DEFAULT_WAIT_S = 0.5


def wait_limit() -> float | None:
    """Seconds the CLI waits at exit for the recording to finish ($MIMOAGENT_DAGSTER_WAIT; `all` = until
    recorded). After that the recorder finishes on its own: the results are already
    on disk and the run shows as in progress in the UI until it is done."""
    raw = os.environ.get(WAIT_ENV, "").strip().lower()
    if raw in ("all", "inf", "infinite"):
        return None
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_WAIT_S
    except ValueError:
        return DEFAULT_WAIT_S


def _absolute(request: RunRequest) -> RunRequest:
    """The request with its local paths made absolute: the recorder does not share the CLI's directory."""
    def local(path: str) -> str:
        return os.path.abspath(path) if os.path.exists(path) else path

    return request.model_copy(update={
        "dataset": local(request.dataset), "configs": [local(c) for c in request.configs],
        "output_dir": Path(os.path.abspath(request.output_dir)),
        "recalc": local(request.recalc) if request.recalc not in (None, "gt") else request.recalc,
    })


class DagsterObserver:
    def __init__(self, request: RunRequest):
        self.request = request
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.writer: threading.Thread | None = None
        self.link: RecorderLink | None = None
        self.error: str | None = None  # why nothing could be sent (the recorder did not start)
        self.log = Path(request.output_dir) / LOG_FILE

    def start(self, plan: RunPlan) -> None:
        """Nothing planned (a rerun with everything finished) records nothing: no run, no events."""
        if not plan.jobs:
            return
        header = RecordingHeader(
            request=_absolute(self.request), config_names=[c.name for c in plan.configs],
            instance_ids=[t.instance_id for t in plan.tasks], planned=[j.key for j in plan.jobs],
        )
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.log.write_text("")
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
            self._note(f"not recorded: {self.error}")
            print(f"mimoagent: dagster: not recorded: {self.error} (log: {self.log})", file=sys.stderr)
            return
        limit = wait_limit()
        reply = self.link.result(None if limit is None else max(0.0, limit - (time.monotonic() - t0)))
        waited = time.monotonic() - t0
        if reply is None:
            self._note(f"{WAIT_LINE} {waited:.3f} (then left recording in the background)")
            print(f"mimoagent: dagster: recording finishes in the background (recorder log: {self.link.log})",
                  file=sys.stderr)
            return
        self._note(f"{WAIT_LINE} {waited:.3f}")  # the figure bench/bench_dagster.py reports
        self._note(f"recorded by pid {self.link.pid}: {reply}")
        if reply != "ok":
            print(f"mimoagent: dagster: not recorded: {reply.removeprefix('error ')} (recorder log: "
                  f"{self.link.log})", file=sys.stderr)
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
