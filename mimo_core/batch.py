"""Plan and run many rollouts: config assignment (A/B), resume, recalc sources, a worker pool, Ctrl-C.

Rollouts spend their time waiting on the model and the sandbox, so threads give near-linear throughput;
the framework's own CPU per step is kept small so that 8+ workers stay close to linear.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from mimo_core.config import NamedConfig, assign_config
from mimo_core.config_checks import check_templates_fit
from mimo_core.datasets.base import Task
from mimo_core.datasets.requirements import check_runnable
from mimo_core.errors import ConfigError
from mimo_core.results import ResultRecord, ResultsStore
from mimo_core.rollout import GT, RolloutJob, run_one


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def plan_jobs(
    tasks: Iterable[Task], configs: list[NamedConfig], num_rollouts: int, output_dir: Path, run_id: str,
    redo_existing: bool = False, seed: int = 0, recalc: str | None = None,
) -> list[RolloutJob]:
    """One job per (instance, assigned config, k) still to do. Finished rollouts are skipped unless
    `redo_existing`; rollouts that ended in an infrastructure error never count as finished."""
    if num_rollouts < 1:
        raise ConfigError("--num-rollouts must be at least 1")
    if recalc is None:
        check_templates_fit(configs, tasks := list(tasks))
    if recalc not in (None, GT):
        jobs = _plan_recalc_from_dir(tasks, configs, Path(recalc), output_dir, run_id, redo_existing, seed)
    else:
        jobs = _not_finished([
            RolloutJob(task=task, config=config, rollout_index=k, output_dir=output_dir, run_id=run_id,
                       recalc=recalc)
            for task in tasks for config in [assign_config(task.instance_id, configs, seed)]
            for k in range(num_rollouts)
        ], output_dir, redo_existing)
    check_runnable((j.task, j.config) for j in jobs)
    return jobs


def _not_finished(jobs: list[RolloutJob], output_dir: Path, redo_existing: bool) -> list[RolloutJob]:
    if redo_existing:
        return jobs
    finished = ResultsStore(output_dir).finished({j.key: j.input_fingerprint for j in jobs})
    return [j for j in jobs if j.key not in finished]


def _plan_recalc_from_dir(
    tasks: Iterable[Task], configs: list[NamedConfig], source: Path, output_dir: Path, run_id: str,
    redo_existing: bool, seed: int,
) -> list[RolloutJob]:
    """Regrade the submissions an earlier run saved, under that run's config names (so A/B stays A/B);
    the sandbox settings come from the config given now."""
    if not (source / "results.jsonl").exists():
        raise ConfigError(f"--recalc-input {source}: no results.jsonl there (expected an earlier -o folder)")
    if source.resolve() == output_dir.resolve():
        raise ConfigError("--recalc-input DIR must differ from -o: a recalc writes new rollout folders")
    by_name = {c.name: c for c in configs}
    earlier = ResultsStore(source).finished()
    jobs = []
    for task in tasks:
        for (instance_id, config_name, k), rec in sorted(earlier.items()):
            if instance_id != task.instance_id:
                continue
            traj = source / rec.output_dir / "traj.json"
            try:
                submission = json.loads(traj.read_text()).get("submission")
            except (OSError, ValueError) as e:
                raise ConfigError(f"--recalc-input: cannot read {traj}: {e}") from None
            chosen = by_name.get(config_name) or assign_config(instance_id, configs, seed)
            config = NamedConfig(name=config_name, path=chosen.path, config=chosen.config)
            jobs.append(RolloutJob(task=task, config=config, rollout_index=k, output_dir=output_dir,
                                   run_id=run_id, recalc=str(source), recalc_submission=submission or ""))
    return _not_finished(jobs, output_dir, redo_existing)


def run_jobs(
    jobs: list[RolloutJob], workers: int = 1, on_result: Callable[[ResultRecord], None] | None = None,
    cancel: threading.Event | None = None,
) -> list[ResultRecord]:
    """Run jobs on a thread pool. On Ctrl-C, running rollouts stop at their next step (status
    `interrupted`, rerun on resume) and clean up their sandboxes before this returns."""
    cancel = cancel or threading.Event()
    results: list[ResultRecord] = []
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="rollout")
    pending: set[Future[ResultRecord]] = {pool.submit(run_one, job, cancel) for job in jobs}
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
        for fut in pending:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return results
