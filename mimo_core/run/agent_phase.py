"""A rollout's agent phase: the agent run in its sandbox under the run's stop and its time limit, then the
submission collected as grading begins; for a recalc, the reference or the saved submission put in place
instead. What it returns is what the grading phase (grading_phase.py) grades."""

from __future__ import annotations

import threading

from mimo_core.agents.base import AgentResult
from mimo_core.datasets.base import DatasetType
from mimo_core.datasets.task_limits import agent_deadline, with_task_limits
from mimo_core.environments.base import Environment
from mimo_core.errors import MimoError, SandboxError
from mimo_core.grading.blame import check_workdir
from mimo_core.records.rollout_logs import RolloutFiles
from mimo_core.run.grading_phase import begin_grading, sandbox_gone
from mimo_core.run.job import GT, RolloutJob
from mimo_core.status import UNGRADED_STATUSES, ExitStatus


class GradingFailed(MimoError):
    """Collecting the agent's submission failed in a sandbox that still answers: whose fault it is is
    decided by the reference check (run/grading_phase.blame), with the agent's result kept for the record."""

    status = ExitStatus.GRADING_ERROR

    def __init__(self, message: str, result: AgentResult | None = None) -> None:
        super().__init__(message)
        self.result = result


def act(
    job: RolloutJob, dtype: DatasetType, env: Environment, rec: RolloutFiles, cancel: threading.Event | None
) -> tuple[AgentResult, str | None]:
    """Run the agent, or, for a recalc, put the reference/saved submission in place instead."""
    if job.recalc is None:
        from mimo_core.agents.factory import make_agent

        config = with_task_limits(job.config.config, job.task)
        if config.agent.time_limit != job.config.config.agent.time_limit:
            rec.log(f"agent time limit: {config.agent.time_limit:g}s (the task's agent_timeout_sec)")
        from mimo_core.agents.stop import AgentStop

        # The agent and its model client stop at the run's stop and at the time limit alike.
        stop = AgentStop(cancel, config.agent.time_limit)  # its clock stands still during budget waits
        agent = make_agent(config, dtype, cancel=stop)
        with agent_deadline(env, config.agent.time_limit, stop):
            result = agent.run(job.task, env, rec)
        if config.agent.type not in ("default", "oracle"):  # a CLI agent's tool calls, seen only now
            rec.containment.transcript(result.messages)
        if result.exit_status in UNGRADED_STATUSES:
            return result, None
        try:
            begin_grading(env, dtype, job.task, rec)
            return result, dtype.collect_submission(env, job.task)
        except SandboxError as e:
            check_workdir(env)  # the agent's own doing, if it destroyed its working directory
            if sandbox_gone(env) or (cancel is not None and cancel.is_set()):
                raise
            raise GradingFailed(f"collecting the submission failed: {e}", result) from e
    if job.recalc == GT:
        applied, log = dtype.apply_gold(env, job.task)
        begin_grading(env, dtype, job.task, rec)
        submission = dtype.collect_submission(env, job.task) if applied else (dtype.gold_submission(job.task) or "")
    else:
        submission = job.recalc_submission or ""
        applied, log = dtype.apply_submission(env, job.task, submission)
        begin_grading(env, dtype, job.task, rec)
    rec.log(f"recalc ({job.recalc}): submission {'applied' if applied else 'did NOT apply'}\n{log[-2000:]}")
    return AgentResult(exit_status=ExitStatus.RECALCULATED), submission
