"""The nightly evaluation: a configured dataset × config set, one run per night tagged with its date.

Written by hand: `build_schedule_from_partitioned_job` refuses dynamic multi-partitions. Configured by
environment variables so a deployment changes it without a code change; unset means skip.
"""

import os
from collections.abc import Mapping

from dagster import (
    DefaultScheduleStatus,
    RunRequest,
    RunsFilter,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)

from mimo_assets.jobs import evaluate_job
from mimo_core.settings import CodeLocationSettings, NightlySettings

NIGHTLY_CRON = CodeLocationSettings.read().nightly_cron  # the schedule's definition needs it when it loads


def nightly_request(night: str, env: Mapping[str, str]) -> RunRequest | SkipReason:
    nightly = NightlySettings.read(env)
    if not nightly.dataset or not nightly.configs:
        return SkipReason(
            f"set {NightlySettings.variable('dataset')} and {NightlySettings.variable('configs')} "
            f"(paths joined by {os.pathsep!r}) to enable the nightly evaluation"
        )
    op_config = {
        "dataset": nightly.dataset,
        "configs": nightly.configs,
        "split": nightly.split,
        "num_rollouts": nightly.rollouts,
        "workers": nightly.workers,
        "paired": nightly.paired,
    }
    if env.get(CodeLocationSettings.variable("output_root")):  # set: the nightly folder goes under it
        root = CodeLocationSettings.read(env).output_root
        op_config["output_dir"] = os.path.join(root, "runs", f"nightly-{night}")
    return RunRequest(
        run_key=f"nightly-{night}",
        run_config={"ops": {"evaluate_op": {"config": op_config}}},
        tags={"mimoagent/date": night, "mimoagent/source": "nightly"},
    )


@schedule(
    job=evaluate_job, cron_schedule=NIGHTLY_CRON, name="nightly_eval", default_status=DefaultScheduleStatus.RUNNING
)
def nightly_eval(context: ScheduleEvaluationContext) -> RunRequest | SkipReason:
    """One run per night: Dagster does not deduplicate a schedule's run keys across ticks (a tick at
    another time of the same night would start a second run), so a night that has its run is skipped."""
    night = context.scheduled_execution_time.date().isoformat()
    done = context.instance.get_runs(RunsFilter(tags={"mimoagent/source": "nightly", "mimoagent/date": night}), limit=1)
    if done:
        return SkipReason(f"night {night} already has its run {done[0].run_id}")
    return nightly_request(night, dict(os.environ))
