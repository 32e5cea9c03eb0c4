"""The nightly evaluation: a configured dataset × config set, one run per night tagged with its date.

Written by hand: `build_schedule_from_partitioned_job` refuses dynamic multi-partitions. Configured by
environment variables so a deployment changes it without a code change; unset means skip.
"""


import os

from dagster import (
    DefaultScheduleStatus,
    RunRequest,
    RunsFilter,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)

from mimo_assets.jobs import evaluate_job

NIGHTLY_CRON = os.environ.get("MIMOAGENT_NIGHTLY_CRON", "0 2 * * *")


def nightly_request(night: str, env: dict[str, str]) -> RunRequest | SkipReason:
    dataset = env.get("MIMOAGENT_NIGHTLY_DATASET", "")
    configs = [p for p in env.get("MIMOAGENT_NIGHTLY_CONFIGS", "").split(os.pathsep) if p]
    if not dataset or not configs:
        return SkipReason("set MIMOAGENT_NIGHTLY_DATASET and MIMOAGENT_NIGHTLY_CONFIGS (paths joined by "
                          f"{os.pathsep!r}) to enable the nightly evaluation")
    op_config = {
        "dataset": dataset, "configs": configs, "split": env.get("MIMOAGENT_NIGHTLY_SPLIT") or None,
        "num_rollouts": int(env.get("MIMOAGENT_NIGHTLY_ROLLOUTS", "1")),
        "workers": int(env.get("MIMOAGENT_NIGHTLY_WORKERS", "8")),
        "paired": env.get("MIMOAGENT_NIGHTLY_PAIRED", "0").lower() in ("1", "true", "yes"),
    }
    root = env.get("MIMOAGENT_OUTPUT_ROOT")
    if root:
        op_config["output_dir"] = os.path.join(root, "runs", f"nightly-{night}")
    return RunRequest(
        run_key=f"nightly-{night}",
        run_config={"ops": {"evaluate_op": {"config": op_config}}},
        tags={"mimoagent/date": night, "mimoagent/source": "nightly"},
    )


@schedule(job=evaluate_job, cron_schedule=NIGHTLY_CRON, name="nightly_eval",
          default_status=DefaultScheduleStatus.RUNNING)
def nightly_eval(context: ScheduleEvaluationContext) -> RunRequest | SkipReason:
    """One run per night: Dagster does not deduplicate a schedule's run keys across ticks (a tick at
    another time of the same night would start a second run), so a night that has its run is skipped."""
    night = context.scheduled_execution_time.date().isoformat()
    done = context.instance.get_runs(RunsFilter(tags={"mimoagent/source": "nightly", "mimoagent/date": night}),
                                     limit=1)
    if done:
        return SkipReason(f"night {night} already has its run {done[0].run_id}")
    return nightly_request(night, dict(os.environ))
