"""Sensors: record finished CLI runs; register config files dropped into the config folder; refresh
analytics after evaluations."""

import hashlib
import json
from pathlib import Path

from dagster import (
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from mimo_assets.asset_keys import GRADED_RESULTS
from mimo_assets.cli_recording import registry
from mimo_assets.cli_recording.ingest import launched
from mimo_assets.cli_recording.job import OP, cli_run_job, cli_run_tags
from mimo_assets.inputs import yaml_files
from mimo_assets.jobs import analytics_job, register_configs_job
from mimo_core.settings import CodeLocationSettings


def config_dir() -> Path:
    return Path(CodeLocationSettings.read().config_dir or Path(__file__).resolve().parent.parent / "configs")


CLI_RUNS_INTERVAL_S = 5


@sensor(job=cli_run_job, minimum_interval_seconds=CLI_RUNS_INTERVAL_S, default_status=DefaultSensorStatus.RUNNING)
def cli_runs_to_record(context: SensorEvaluationContext) -> SensorResult | SkipReason:
    """A CLI run that ended (or was killed) becomes a `cli_run` run within seconds: one per registry entry
    (cli_recording/registry.py), oldest first, its run key the CLI run's id (never asked for twice)."""
    from mimo_assets.instance.home import dagster_home

    requests = []
    for path, entry in registry.ready(dagster_home()):
        run_id = entry.header.request.run_id
        if registry.is_claimed(path) or launched(context.instance, run_id):
            continue  # being recorded (the live recorder, a `mimoagent-dagster` start, a launched run)
        requests.append(
            RunRequest(
                run_key=f"cli-{run_id}",
                tags=cli_run_tags(entry.header, entry.date),
                run_config={"ops": {OP: {"config": {"entry": str(path)}}}},
            )
        )
    return SensorResult(run_requests=requests) if requests else SkipReason("no finished CLI run to record")


@sensor(job=register_configs_job, minimum_interval_seconds=60)
def new_config_files(context: SensorEvaluationContext) -> SensorResult:
    """A new or edited YAML in the config folder is registered (`config_files`), ready to be planned."""
    seen: dict[str, float] = json.loads(context.cursor) if context.cursor else {}
    now = {p: Path(p).stat().st_mtime for p in yaml_files(str(config_dir()))}
    changed = sorted(p for p, m in now.items() if seen.get(p) != m)
    digest = hashlib.sha1(json.dumps([(p, now[p]) for p in changed]).encode()).hexdigest()[:16]
    requests = (
        [RunRequest(run_key=f"configs-{digest}", run_config={"ops": {"config_files": {"config": {"paths": changed}}}})]
        if changed
        else []
    )
    return SensorResult(run_requests=requests, cursor=json.dumps(now))


_IN_PROGRESS = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
]


@sensor(job=analytics_job, minimum_interval_seconds=30, default_status=DefaultSensorStatus.RUNNING)
def analytics_after_new_results(context: SensorEvaluationContext) -> SensorResult | SkipReason:
    """Refresh the results table and analytics once new graded results have landed and nothing is still
    writing them. Watching the graded results themselves (not runs of one job) catches CLI runs, which
    execute in their own process, as well as UI runs, backfills and the nightly schedule."""
    records = context.instance.fetch_materializations(GRADED_RESULTS, limit=1).records
    if not records:
        return SkipReason("no graded results yet")
    latest = records[0].storage_id
    if context.cursor and int(context.cursor) >= latest:
        return SkipReason("analytics are current")
    running = context.instance.get_runs(RunsFilter(statuses=_IN_PROGRESS), limit=50)
    if any(r.job_name != analytics_job.name for r in running):
        return SkipReason("an evaluation is still writing results")
    return SensorResult(run_requests=[RunRequest(run_key=f"analytics-{latest}")], cursor=str(latest))
