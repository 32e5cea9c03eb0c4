"""The CLI's door into the Dagster graph: a `mimoagent.observers` plug-in that keeps Dagster off the CLI's
critical path.

The CLI plans and runs rollouts itself and writes results.jsonl, with no Dagster in its process. This
observer only leaves a record of where its run is: a registry entry in the Dagster home (registry.py),
written when the rollouts start and marked ended at the end, two small atomic writes. Dagster records the
run afterwards (ingest.py: the daemon's sensor within seconds, else the next `mimoagent-dagster` start),
with the partitions, lineage and run a live recording would give; nothing is left running when the CLI
exits. With MIMOAGENT_DAGSTER_LIVE=1 the run also goes to the warm recorder as it happens (live.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mimo_assets.cli_recording.feed import RecordingHeader
from mimo_core.records.results import ResultRecord
from mimo_core.settings import RecordingSettings

if TYPE_CHECKING:
    from mimo_assets.cli_recording.live import LiveRecording
    from mimo_core.run.plan import RunPlan, RunRequest

LOG_FILE = "dagster_record.log"
REGISTERED_LINE = "registered for Dagster to record:"


def _absolute(request: RunRequest) -> RunRequest:
    """The request with its local paths made absolute: whoever records it does not share the CLI's directory
    (its output folder already is: RunRequest resolves it)."""

    def local(path: str) -> str:
        return os.path.abspath(path) if os.path.exists(path) else path

    return request.model_copy(
        update={
            "dataset": local(request.dataset),
            "configs": [local(c) for c in request.configs],
            "recalc": local(request.recalc) if request.recalc not in (None, "gt") else request.recalc,
        }
    )


class DagsterObserver:
    def __init__(self, request: RunRequest):
        self.request = request
        self.entry: Path | None = None
        self.live: LiveRecording | None = None
        self.log = Path(request.output_dir) / LOG_FILE

    def start(self, plan: RunPlan) -> None:
        """Nothing planned (a rerun with everything finished) records nothing: no run, no events."""
        if not plan.jobs:
            return
        from mimo_assets.cli_recording.registry import write_entry
        from mimo_assets.input_versions import config_files, recorded_dataset
        from mimo_assets.instance.home import dagster_home

        request = _absolute(self.request)
        header = RecordingHeader(
            request=request,
            config_names=[c.name for c in plan.configs],
            instance_ids=[t.instance_id for t in plan.tasks],
            planned=[j.key for j in plan.jobs],
            dataset=recorded_dataset(plan.dataset_rows) if plan.dataset_rows else None,
            config_files=config_files(request.configs),
        )
        self.log.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.entry = write_entry(dagster_home(), header)
            self.log.write_text(f"{REGISTERED_LINE} {self.entry}\n")
        except (OSError, ValueError) as e:  # no home (a bad DAGSTER_HOME, a full disk): the rollouts go on
            print(f"mimoagent: dagster: not recorded: {e}", file=sys.stderr)
            self.log.write_text(f"not recorded: {e}\n")
            return
        if RecordingSettings.read().live:
            from mimo_assets.cli_recording.live import LiveRecording

            self.live = LiveRecording(self.log)
            self.live.start(header)

    def record(self, record: ResultRecord) -> None:
        if self.live is not None:
            self.live.record(record)

    def finish(self) -> None:
        if self.entry is None:
            return
        from mimo_assets.cli_recording.registry import mark_ended

        try:
            mark_ended(self.entry)
        except OSError as e:  # recorded later as a killed run: what it finished, nothing lost
            print(f"mimoagent: dagster: could not mark the run ended ({e}); it is recorded as killed", file=sys.stderr)
        if self.live is not None:
            self.live.finish()
