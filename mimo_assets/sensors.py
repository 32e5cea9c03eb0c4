"""Sensors: register config files dropped into the config folder; refresh analytics after evaluations."""


import hashlib
import json
import os
from pathlib import Path

from dagster import (
    AssetSelection,
    DagsterRunStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    define_asset_job,
    run_status_sensor,
    sensor,
)

from mimo_assets.assets.datasets import yaml_files
from mimo_assets.jobs import evaluate_job

analytics_job = define_asset_job(
    "refresh_analytics", selection=AssetSelection.groups("analytics"),
    description="Rebuild the results table and every analytics asset (and run their checks).",
)
register_configs_job = define_asset_job("register_configs", selection=AssetSelection.assets("config_files"))


def config_dir() -> Path:
    return Path(os.environ.get("MIMOAGENT_CONFIG_DIR") or Path(__file__).resolve().parent.parent / "configs")


@sensor(job=register_configs_job, minimum_interval_seconds=60)
def new_config_files(context: SensorEvaluationContext) -> SensorResult:
    """A new or edited YAML in the config folder becomes a `config` partition."""
    seen: dict[str, float] = json.loads(context.cursor) if context.cursor else {}
    now = {p: Path(p).stat().st_mtime for p in yaml_files(str(config_dir()))}
    changed = sorted(p for p, m in now.items() if seen.get(p) != m)
    digest = hashlib.sha1(json.dumps([(p, now[p]) for p in changed]).encode()).hexdigest()[:16]
    requests = [RunRequest(run_key=f"configs-{digest}",
                           run_config={"ops": {"config_files": {"config": {"paths": changed}}}})] if changed else []
    return SensorResult(run_requests=requests, cursor=json.dumps(now))


@run_status_sensor(run_status=DagsterRunStatus.SUCCESS, monitored_jobs=[evaluate_job],
                   request_job=analytics_job, minimum_interval_seconds=60)
def analytics_after_evaluate(context: SensorEvaluationContext) -> RunRequest:
    return RunRequest(run_key=None)
