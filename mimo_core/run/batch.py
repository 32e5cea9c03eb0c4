"""Run many rollouts on a worker pool, with Ctrl-C; what to run is planned in `mimo_core.run.plan`.

Rollouts spend their time waiting on the model and the sandbox, so threads give near-linear throughput;
the framework's own CPU per step is kept small so that 8+ workers stay close to linear.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

from mimo_core.records.results import ResultRecord
from mimo_core.run.job import RolloutJob
from mimo_core.run.rollout import run_one
from mimo_core.status import ExitStatus

if TYPE_CHECKING:
    from mimo_core.run.ray.options import RayOptions

# What `--retries` does again within the run: the machinery's failures that another try may not meet. Never
# the input's or the agent's (they would fail the same way), a rejected key (it will be rejected again), a
# bug (internal_error) or a stop (interrupted).
RETRIED_STATUSES = frozenset({ExitStatus.MODEL_ERROR, ExitStatus.ENVIRONMENT_ERROR, ExitStatus.GRADING_ERROR})
MAX_RETRY_DELAY_S = 300.0


class RunSpend:
    """The run's `cost_limit` (dollars; 0: none): the finished rollouts' cost summed; past it, no rollout
    starts (those left are counted in `not_started`)."""

    def __init__(self, limit: float = 0.0) -> None:
        self.limit, self.spent, self.not_started = limit, 0.0, 0
        self._lock = threading.Lock()

    def add(self, record: ResultRecord) -> None:
        with self._lock:
            self.spent += record.cost

    @property
    def reached(self) -> bool:
        with self._lock:
            return bool(self.limit) and self.spent >= self.limit

    def refuse(self, first: bool = True) -> bool:
        """True when a rollout about to start must not: the limit is reached (a `first` start is counted)."""
        if not self.reached:
            return False
        with self._lock:
            self.not_started += first
        return True


def run_jobs(
    jobs: list[RolloutJob],
    workers: int = 1,
    on_result: Callable[[ResultRecord], None] | None = None,
    cancel: threading.Event | None = None,
    ray: RayOptions | None = None,
    retries: int = 0,
    retry_delay: float = 5.0,
    spend: RunSpend | None = None,
) -> list[ResultRecord]:
    """Run jobs on a thread pool, or with `ray` on a Ray cluster (`mimo_core.run.ray`). On Ctrl-C,
    running rollouts stop at their next step (status `interrupted`; on Ray: cancelled, no record) and
    clean up their sandboxes before this returns; a resume does them again. `retries`: a rollout that
    ended in one of `RETRIED_STATUSES` runs again up to that many times, after `retry_delay` seconds
    doubled at each try (jittered), its failed attempts kept in attempts/<n>/ (threads only). `spend`:
    the run's cost limit; a rollout not started for it has no record."""
    cancel = cancel or threading.Event()
    if ray is not None:
        from mimo_core.run.ray.driver import run_jobs_on_ray

        _running.add(cancel)
        try:
            return run_jobs_on_ray(jobs, workers, on_result, ray, cancel)
        finally:
            _running.discard(cancel)
    _running.add(cancel)
    results: list[ResultRecord] = []
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="rollout")
    spend = spend or RunSpend()
    pending: set[Future[ResultRecord | None]] = {
        pool.submit(_start_one, job, cancel, retries, retry_delay, spend) for job in jobs
    }
    try:
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in done:
                record = fut.result()
                if record is None:  # not started: the run's cost limit
                    continue
                results.append(record)
                if on_result is not None:
                    on_result(record)
    except BaseException:
        cancel.set()
        _interrupt_commands()
        for fut in pending:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        _running.discard(cancel)
    pool.shutdown(wait=True)
    return results


def _start_one(
    job: RolloutJob, cancel: threading.Event, retries: int = 0, retry_delay: float = 5.0, spend: RunSpend | None = None
) -> ResultRecord | None:
    """A rollout, once the host has room for it: below the low-water mark the run stops (disk.low_water);
    again after a back-off while it ends in an infrastructure error worth retrying and retries are left."""
    from mimo_core.run.disk_full import low_water

    record = None
    for retry in range(retries + 1):
        if retry and cancel.wait(retry_backoff(retry, retry_delay)):
            break  # stopped during the back-off: the last attempt's record stands
        if spend is not None and spend.refuse(first=record is None):
            break  # the run's cost limit: not started (a retry not either: the failed attempt's record stands)
        if (full := low_water(job)) is not None:
            raise full
        record = run_one(job, cancel)
        if spend is not None:
            spend.add(record)  # (here, not as the result arrives: the next rollout may start before that)
        if record.exit_status not in RETRIED_STATUSES or cancel.is_set():
            break
    return record


def retry_backoff(retry: int, delay: float) -> float:
    """Seconds before retry number `retry` (1, 2, ...): `delay` doubled each time, jittered to [½, 1]."""
    top = min(delay * 2 ** (retry - 1), MAX_RETRY_DELAY_S)
    return random.uniform(top / 2, top)


_running: set[threading.Event] = set()  # the cancel events of the batches running in this process


def cancel_all() -> None:
    """Stop every running batch of this process (from any thread, e.g. a signal handler)."""
    for cancel in list(_running):
        cancel.set()
    _interrupt_commands()


def _interrupt_commands() -> None:
    """Kill the commands running in this process's sandboxes now (a `sleep 60` must not hold a stop for a
    minute); each rollout then sees the cancel at its next step and unwinds through its own cleanup."""
    from mimo_core.environments.live import interrupt_all

    interrupt_all()
