"""The CLI's door into the Dagster graph: a `mimoagent.recorders` plug-in.

The CLI plans and runs rollouts itself, with no Dagster on its path. This recorder turns the same run
into one in-process `evaluate` run in the shared instance, whose step logs each partition's
materializations as rollouts finish. `import dagster` costs seconds, so everything Dagster happens on a
background thread: rollouts start at once, `record` only queues, and `finish` waits for the tail.
"""

from __future__ import annotations

import sys
import threading
import time
from datetime import date
from typing import Any

from mimo_assets.feed import Feed
from mimo_core.results import ResultRecord


class DagsterRecorder:
    def __init__(self, request: dict[str, Any]):
        self.request = request
        self.feed: Feed | None = None
        self.thread: threading.Thread | None = None
        self.dagster_run_id: str | None = None
        self.error: str | None = None

    def start(self, jobs_planned: list[dict[str, Any]]) -> None:
        """Nothing planned (a rerun with everything finished) records nothing: no run, no events."""
        if not jobs_planned:
            return
        planned = [(j["instance_id"], j["config_name"], int(j.get("rollout_index", 0))) for j in jobs_planned]
        self.feed = Feed(self.request, planned)
        self.thread = threading.Thread(target=self._run, name="mimo-dagster", daemon=True)
        self.thread.start()

    def record(self, record: ResultRecord) -> None:
        if self.feed is not None:
            self.feed.put(record)

    def finish(self) -> None:
        if self.feed is None or self.thread is None:
            return
        self.feed.close()
        t0 = time.monotonic()
        self.thread.join()
        if self.error:
            print(f"mimoagent: dagster: not recorded: {self.error}", file=sys.stderr)
        elif time.monotonic() - t0 > 2:
            print(f"mimoagent: dagster: recording finished in {time.monotonic() - t0:.1f}s", file=sys.stderr)

    def _run(self) -> None:
        assert self.feed is not None
        try:
            from mimo_assets.definitions import defs
            from mimo_assets.home import dagster_home, get_instance
            from mimo_assets.jobs import EVALUATE_JOB

            req = self.request
            tags = {
                "mimoagent/source": "cli", "mimoagent/run_id": req["run_id"],
                "mimoagent/date": date.today().isoformat(), "mimoagent/dataset": str(req["dataset"])[:200],
                "mimoagent/configs": ",".join(req["config_names"])[:200],
                "mimoagent/output_dir": req["output_dir"][:200],
            }
            if req.get("recalc"):
                tags["mimoagent/recalc"] = str(req["recalc"])[:200]
            with get_instance() as instance:
                result = defs.resolve_job_def(EVALUATE_JOB).execute_in_process(
                    instance=instance, tags=tags, raise_on_error=False,
                    run_config={"ops": {"evaluate_op": {"config": {"feed": self.feed.id}}},
                                "loggers": {"console": {"config": {"log_level": "WARNING"}}}},
                )
            self.dagster_run_id = result.run_id
            if not result.success:
                self.error = f"dagster run {result.run_id} failed (see it in the UI; DAGSTER_HOME={dagster_home()})"
        except Exception as e:  # never take the rollouts down with the bookkeeping
            self.error = f"{type(e).__name__}: {e}"
        finally:
            for _ in self.feed:  # the step may have stopped early: drain so nothing blocks
                pass
