"""The CLI's door into the Dagster graph: a `mimoagent.observers` plug-in.

The CLI plans and runs rollouts itself, with no Dagster on its path. This observer turns the same run
into one in-process `evaluate` run in the shared instance, whose step logs each partition's
materializations as rollouts finish. That run lives in a child process (`child`): `import
dagster` costs seconds and each stored event ~7 ms of CPU, which in a thread would take the GIL from the
rollouts. Here `start` only spawns, `record` only queues (a writer thread feeds the pipe), and `finish`
waits for the tail, at most `wait_limit()` seconds (0.5 by default): a short run ends before the child
has even imported Dagster, and the CLI should not wait seconds for bookkeeping.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mimo_assets.cli_recording.feed import END_OF_RUN, RecordingHeader
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
    recorded). After that the child, in its own session, finishes on its own: the results are already
    on disk and the run shows as in progress in the UI until it is done."""
    raw = os.environ.get(WAIT_ENV, "").strip().lower()
    if raw in ("all", "inf", "infinite"):
        return None
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_WAIT_S
    except ValueError:
        return DEFAULT_WAIT_S


class DagsterObserver:
    def __init__(self, request: RunRequest):
        self.request = request
        self.proc: subprocess.Popen[str] | None = None
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.writer: threading.Thread | None = None
        self.log = Path(request.output_dir) / LOG_FILE

    def start(self, plan: RunPlan) -> None:
        """Nothing planned (a rerun with everything finished) records nothing: no run, no events."""
        if not plan.jobs:
            return
        header = RecordingHeader(
            request=self.request, config_names=[c.name for c in plan.configs],
            instance_ids=[t.instance_id for t in plan.tasks], planned=[j.key for j in plan.jobs],
        )
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "w") as log:  # a file, not a pipe: a chatty child can never block on it
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "mimo_assets.cli_recording.child"], stdin=subprocess.PIPE, stdout=log,
                stderr=subprocess.STDOUT, text=True, env=os.environ.copy(), start_new_session=True,
            )
        self.queue.put(header.model_dump_json())
        self.writer = threading.Thread(target=self._write, name="mimo-dagster-writer", daemon=True)
        self.writer.start()

    def record(self, record: ResultRecord) -> None:
        if self.proc is not None:
            self.queue.put(record)

    def finish(self) -> None:
        if self.proc is None or self.writer is None:
            return
        self.queue.put(_END)
        t0 = time.monotonic()
        self.writer.join()
        try:
            code = self.proc.wait(timeout=wait_limit())
        except subprocess.TimeoutExpired:
            with open(self.log, "a") as log:
                log.write(f"{WAIT_LINE} {time.monotonic() - t0:.3f} (then left recording in the background)\n")
            print(f"mimoagent: dagster: recording finishes in the background (pid {self.proc.pid}, log: {self.log})",
                  file=sys.stderr)
            return
        waited = time.monotonic() - t0
        with open(self.log, "a") as log:  # the figure bench/bench_dagster.py reports
            log.write(f"{WAIT_LINE} {waited:.3f}\n")
        if code:
            lines = self.log.read_text(errors="replace").strip().splitlines()
            tail = [ln for ln in lines if not ln.startswith(WAIT_LINE)][-1:] or [f"exit {code}"]
            print(f"mimoagent: dagster: not recorded: {tail[0]} (log: {self.log})", file=sys.stderr)
        elif waited > 2:
            print(f"mimoagent: dagster: recording finished {waited:.1f}s after the rollouts", file=sys.stderr)

    def _write(self) -> None:
        """The only thread touching the pipe: a slow child blocks it, never a rollout worker."""
        assert self.proc is not None and self.proc.stdin is not None
        try:
            while (item := self.queue.get()) is not _END:
                line = item if isinstance(item, str) else item.model_dump_json()
                self.proc.stdin.write(line + "\n")
                self.proc.stdin.flush()  # in the child now: a SIGKILLed CLI loses nothing it finished
            self.proc.stdin.write(END_OF_RUN + "\n")
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):  # the child died; finish() reports its error
            pass
