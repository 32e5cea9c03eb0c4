"""Our side of a benchmark, in a fresh process: run rollouts through `run_jobs` and measure this process.

CPU is `time.process_time()` of this process only (the scripted server is another process; the shells
the commands run in are reported apart as `child_cpu`). One warm-up rollout runs first, so lazy imports
and first-call caches are not billed to the measured ones. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

from bench.common import write_mimo_config, write_task
from mimo_core.batch import new_run_id, plan_jobs, run_jobs
from mimo_core.config import load_configs
from mimo_core.datasets.loader import load_tasks
from mimo_core.results import ResultRecord


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _batch(cfg: Path, data: Path, out: Path, workers: int) -> list[ResultRecord]:
    jobs = plan_jobs(load_tasks(str(data)), load_configs([str(cfg)]), 1, out, new_run_id())
    return run_jobs(jobs, workers)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--rollouts", type=int, default=1)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--workdir", type=Path, required=True)
    args = p.parse_args()

    cfg = write_mimo_config(args.workdir, args.base_url + "/v1", args.steps)
    one = write_task(args.workdir / "one", 1)
    _batch(cfg, one, args.workdir / "out-warmup", 1)

    cpu, wall, child, records = [], [], [], []
    if args.workers == 1:
        for i in range(args.rollouts):
            c0, w0, k0 = time.process_time(), time.perf_counter(), _children_cpu()
            records += _batch(cfg, one, args.workdir / f"out-{i}", 1)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
            child.append(_children_cpu() - k0)
    else:
        many = write_task(args.workdir / "many", args.rollouts)
        c0, w0, k0 = time.process_time(), time.perf_counter(), _children_cpu()
        records = _batch(cfg, many, args.workdir / "out-batch", args.workers)
        cpu, wall, child = [time.process_time() - c0], [time.perf_counter() - w0], [_children_cpu() - k0]
    print(json.dumps({"cpu": cpu, "wall": wall, "child_cpu": child, "calls": sum(r.steps for r in records),
                      "statuses": [r.exit_status for r in records]}))


if __name__ == "__main__":
    main()
