"""Run many rollouts on a worker pool, with Ctrl-C; what to run is planned in `mimo_core.run.plan`.

Rollouts spend their time waiting on the model and the sandbox, so threads give near-linear throughput;
the framework's own CPU per step is kept small so that 8+ workers stay close to linear.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

from mimo_core.records.results import ResultRecord
from mimo_core.run.job import RolloutJob
from mimo_core.run.rollout import run_one

if TYPE_CHECKING:
    from mimo_core.run.ray.options import RayOptions


def run_jobs(
    jobs: list[RolloutJob],
    workers: int = 1,
    on_result: Callable[[ResultRecord], None] | None = None,
    cancel: threading.Event | None = None,
    ray: RayOptions | None = None,
) -> list[ResultRecord]:
    """Run jobs on a thread pool, or with `ray` on a Ray cluster (`mimo_core.run.ray`). On Ctrl-C,
    running rollouts stop at their next step (status `interrupted`; on Ray: cancelled, no record) and
    clean up their sandboxes before this returns; a resume does them again."""
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
    pending: set[Future[ResultRecord]] = {pool.submit(_start_one, job, cancel) for job in jobs}
    try:
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in done:
                record = fut.result()
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


def _start_one(job: RolloutJob, cancel: threading.Event) -> ResultRecord:
    """A rollout, once the host has room for it: below the low-water mark the run stops (disk.low_water)."""
    from mimo_core.run.disk_full import low_water

    if (full := low_water(job)) is not None:
        raise full
    return run_one(job, cancel)


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
