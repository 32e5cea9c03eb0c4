"""One in-process run of the `cli_run` job over a CLI run's feed: how the ingestion (ingest.py) and the
live recorder (a fork of it per CLI run) record a run in the process that holds its records."""

from __future__ import annotations

import sys
from datetime import date as date_

from dagster import DagsterInstance

from mimo_assets.cli_recording.feed import Feed


def execute_feed(feed: Feed, instance: DagsterInstance, date: str | None = None) -> str | None:
    """Run the `cli_run` job in this process over a feed; an error message, or None when recorded (a run
    that is red because partitions failed, or because its CLI was killed, is recorded)."""
    try:
        from mimo_assets.cli_recording.job import CLI_RUN_JOB, OP, cli_run_job, cli_run_tags
        from mimo_assets.cli_recording.record import KILLED_PREFIX
        from mimo_assets.eventlog.batching import INFRA_FAILURE_PREFIX
        from mimo_assets.instance.home import dagster_home
        from resources import OutputStore

        # The bare job with the resources its step takes, not the code location's Definitions: those import
        # the analytics (polars) and every asset, ~0.3 s of CPU per recorded run.
        result = cli_run_job.execute_in_process(
            instance=instance,
            tags=cli_run_tags(feed, date or date_.today().isoformat()),
            raise_on_error=False,
            resources={"cli_feed": feed, "output_store": OutputStore()},
            run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
        )
        if not result.success:
            error = result.failure_data_for_node(OP)
            message = str(error.error.message if error and error.error else "").strip()
            if INFRA_FAILURE_PREFIX in message or KILLED_PREFIX in message:  # recorded, and red
                print(f"recorded as failed dagster run {result.run_id}: {message[:300]}", file=sys.stderr, flush=True)
                return None
            return (
                f"dagster run {result.run_id} ({CLI_RUN_JOB}) failed (see it in the UI; DAGSTER_HOME={dagster_home()})"
            )
        return None
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    finally:
        for _ in feed:  # the step may have stopped early: drain so the reader never blocks
            pass
