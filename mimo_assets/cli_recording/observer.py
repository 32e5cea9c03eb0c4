"""The CLI's door into the Dagster graph: a `mimoagent.observers` plug-in.

The CLI plans and runs rollouts itself, with no Dagster on its path. This observer turns the same run
into one in-process `evaluate` run in the shared instance, whose step logs each partition's
materializations as rollouts finish. That run lives in a child process (`child`): `import
dagster` costs seconds and each stored event ~7 ms of CPU, which in a thread would take the GIL from the
rollouts. Here `start` only spawns, `record` only queues (a writer thread feeds the pipe), and `finish`
waits for the tail.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from mimo_core.results import ResultRecord

_END = object()
LOG_FILE = "dagster_record.log"


class DagsterObserver:
    def __init__(self, request: dict[str, Any]):
        self.request = request
        self.proc: subprocess.Popen[str] | None = None
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.writer: threading.Thread | None = None
        self.log = Path(request["output_dir"]) / LOG_FILE

    def start(self, jobs_planned: list[dict[str, Any]]) -> None:
        """Nothing planned (a rerun with everything finished) records nothing: no run, no events."""
        if not jobs_planned:
            return
        planned = [[j["instance_id"], j["config_name"], int(j.get("rollout_index", 0))] for j in jobs_planned]
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "w") as log:  # a file, not a pipe: a chatty child can never block on it
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "mimo_assets.cli_recording.child"], stdin=subprocess.PIPE, stdout=log,
                stderr=subprocess.STDOUT, text=True, env=os.environ.copy(), start_new_session=True,
            )
        self.queue.put(json.dumps({"request": self.request, "planned": planned}))
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
        if self.proc.wait():
            tail = self.log.read_text(errors="replace").strip().splitlines()[-1:] or [f"exit {self.proc.returncode}"]
            print(f"mimoagent: dagster: not recorded: {tail[0]} (log: {self.log})", file=sys.stderr)
        elif time.monotonic() - t0 > 2:
            print(f"mimoagent: dagster: recording finished {time.monotonic() - t0:.1f}s after the rollouts",
                  file=sys.stderr)

    def _write(self) -> None:
        """The only thread touching the pipe: a slow child blocks it, never a rollout worker."""
        assert self.proc is not None and self.proc.stdin is not None
        try:
            while (item := self.queue.get()) is not _END:
                line = item if isinstance(item, str) else item.model_dump_json()
                self.proc.stdin.write(line + "\n")
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):  # the child died; finish() reports its error
            pass
