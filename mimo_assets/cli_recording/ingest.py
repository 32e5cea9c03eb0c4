"""Dagster records finished CLI runs itself, off the CLI's critical path: each ready registry entry
(registry.py) becomes one `cli_run` run with the partitions, lineage and tags of the CLI run.

Two ways in: the `cli_runs_to_record` sensor (sensors.py) in the daemon asks for one run per entry within
seconds of the CLI's end; `ingest_pending` records them in this process, oldest first, and is what
`mimoagent-dagster dev|webserver|daemon` runs before it starts Dagster (and `mimoagent-dagster ingest`),
so without a daemon a run shows on the webserver's next start. Both hold the entry's lock while they
record it, so a run is never recorded twice.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from mimo_assets.cli_recording import registry

IN_PROGRESS = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
]


def launched(instance: DagsterInstance, run_id: str) -> bool:
    """A `cli_run` run for this CLI run is queued or under way (the sensor asked for it): it records it."""
    return bool(
        instance.get_runs(
            RunsFilter(tags={"mimoagent/source": "cli", "mimoagent/run_id": run_id}, statuses=IN_PROGRESS), limit=1
        )
    )


def ingest_entry(instance: DagsterInstance, path: Path) -> str | None:
    """Record one entry in this process, under its lock; a line saying how it went, or None when it was not
    ours to record (held by another process, gone, or a launched run's)."""
    from mimo_assets.cli_recording.execute import execute_feed

    with registry.claimed(path) as entry:
        if entry is None:
            return None
        run_id = entry.header.request.run_id
        if launched(instance, run_id):
            return None
        error = execute_feed(registry.feed_from_entry(entry, path), instance, entry.date)
        if error is None:
            registry.done(path)
        return f"CLI run {run_id}: {error or 'recorded'}"


def ingest_pending(log: Callable[[str], None] | None = None, instance: DagsterInstance | None = None) -> list[str]:
    """Record every ready entry of this home, oldest first; one line per entry recorded (or failed)."""
    from mimo_assets.instance.home import dagster_home, get_instance

    home = dagster_home()
    ready = registry.ready(home)
    if not ready:
        return []
    say = log or (lambda line: print(f"mimoagent-dagster: {line}", file=sys.stderr, flush=True))
    say(f"recording {len(ready)} finished CLI run(s) into Dagster")
    own = instance is None
    instance = instance or get_instance()
    try:
        lines = [line for path, _ in ready if (line := ingest_entry(instance, path)) is not None]
    finally:
        if own:
            instance.dispose()
    for line in lines:
        say(line)
    return lines
