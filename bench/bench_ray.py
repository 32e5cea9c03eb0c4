"""The Ray runner's costs against the thread runner's, on a real Ray cluster of separate raylets on this
machine (testkit/ray_cluster.py). Prints:

- per-rollout scheduling overhead (wall time per rollout minus the rollout's own `duration_s`, one
  rollout at a time) of each runner, at 0 and 100 ms model latency;
- throughput (rollouts/s) with 1 and with 3 worker nodes of 2 CPUs (2 rollouts in flight per node);
- the driver's peak RSS with 10,000 rollouts planned (a `mimoagent` process, stopped after a while).

    uv run python -m bench.bench_ray [--rollouts 20] [--throughput-rollouts 24] [--memory-plan 10000]

The scripted model answers in-process (an edit, then submit: two calls per rollout); sandboxes are local.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from testkit.ray_cluster import RayTestCluster
from testkit.scripted_llm import ScriptedLLM, call, turns
from testkit.tasks import write_config, write_tasks

REPO = Path(__file__).resolve().parents[1]
SOLVE = turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))


def _jobs(folder: Path, n: int, k: int = 1) -> list[Any]:
    from mimo_core.run.plan import RunRequest, plan_run

    data, cfg = write_tasks(folder, n=n), write_config(folder, "cfg")
    return plan_run(RunRequest(dataset=str(data), configs=[str(cfg)], num_rollouts=k, output_dir=folder / "out")).jobs


def _timed(jobs: list[Any], workers: int, ray: Any) -> tuple[float, list[Any]]:
    from mimo_core.run.batch import run_jobs

    t0 = time.perf_counter()
    records = run_jobs(jobs, workers, ray=ray)
    wall = time.perf_counter() - t0
    assert len(records) == len(jobs) and all(r.passed for r in records), [r.exit_status for r in records]
    return wall, records


def overhead(root: Path, llm: ScriptedLLM, n: int, ray: Any) -> None:
    print("per-rollout scheduling overhead, one rollout at a time (wall/N - mean duration_s):")
    for latency in (0.0, 0.1):
        llm.latency = latency
        row = []
        for name, opts in (("thread", None), ("ray", ray)):
            wall, records = _timed(_jobs(Path(tempfile.mkdtemp(dir=root)), n), 1, opts)
            inner = statistics.mean(r.duration_s for r in records)
            row.append(f"{name}: {wall / n * 1000:7.1f} ms/rollout, overhead {(wall / n - inner) * 1000:6.1f} ms")
        print(f"  model latency {latency * 1000:3.0f} ms  " + "  |  ".join(row), flush=True)


def throughput(root: Path, llm: ScriptedLLM, n: int, ray: Any, cluster: RayTestCluster, label: str) -> None:
    llm.latency = 0.1
    nodes = len(cluster.worker_ids)
    _timed(_jobs(Path(tempfile.mkdtemp(dir=root)), 4 * nodes), 2 * nodes, ray)  # warm: a worker process per slot
    wall, _ = _timed(_jobs(Path(tempfile.mkdtemp(dir=root)), n), 2 * nodes, ray)
    print(
        f"  {label}: {nodes} worker node(s), {2 * nodes} in flight: {n / wall:5.2f} rollouts/s ({wall:.1f} s for {n})",
        flush=True,
    )


def driver_memory(root: Path, llm: ScriptedLLM, planned: int, cluster: RayTestCluster, seconds: float) -> None:
    """The driver holds the plan (jobs) and `--workers` tasks in flight: its peak RSS with `planned` jobs."""
    llm.latency = 0.0
    folder = Path(tempfile.mkdtemp(dir=root))
    data, cfg = write_tasks(folder, n=planned // 4), write_config(folder, "cfg")
    env = {
        **os.environ,
        **cluster.env,
        "MIMO_TEST_BASE_URL": llm.openai_base_url,
        "MIMO_TEST_API_KEY": "k",
        "MIMOAGENT_OBSERVERS": "0",
    }
    for name, extra in (("thread", []), ("ray", ["--runner", "ray", "--ray-address", cluster.address])):
        out = folder / f"out-{name}"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mimo_core.cli",
                "-c",
                str(cfg),
                "--dataset",
                str(data),
                "--num-rollouts",
                "4",
                "--workers",
                "6",
                "-o",
                str(out),
                *extra,
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        peak, deadline = 0, time.monotonic() + seconds
        while time.monotonic() < deadline and proc.poll() is None:
            peak = max(peak, _hwm_kb(proc.pid))
            time.sleep(0.5)
        peak = max(peak, _hwm_kb(proc.pid))
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        done = len((out / "results.jsonl").read_text().splitlines()) if (out / "results.jsonl").exists() else 0
        print(
            f"  {name}: peak RSS {peak / 1024:6.1f} MiB with {planned} planned ({done} finished in {seconds:.0f} s)",
            flush=True,
        )


def _hwm_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rollouts", type=int, default=20)
    p.add_argument("--throughput-rollouts", type=int, default=24)
    p.add_argument("--memory-plan", type=int, default=10_000)
    p.add_argument("--memory-seconds", type=float, default=60)
    args = p.parse_args()
    from mimo_core.run.ray.options import RayOptions

    root = Path(tempfile.mkdtemp(prefix="mimo-bench-ray-"))
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at start", flush=True)
    cluster = RayTestCluster(workers=1, cpus_per_node=2).start()
    try:
        with ScriptedLLM(SOLVE) as llm:
            os.environ.update({**cluster.env, "MIMO_TEST_BASE_URL": llm.openai_base_url, "MIMO_TEST_API_KEY": "k"})
            import ray

            ray.init(
                address=cluster.address, log_to_driver=False, include_dashboard=False, logging_level=logging.WARNING
            )
            opts = RayOptions(address=cluster.address)
            _timed(_jobs(Path(tempfile.mkdtemp(dir=root)), 4), 2, opts)  # warm: worker processes and imports
            overhead(root, llm, args.rollouts, opts)
            print("throughput at 100 ms model latency:")
            throughput(root, llm, args.throughput_rollouts, opts, cluster, "ray")
            cluster.add_worker()
            cluster.add_worker()
            time.sleep(2)
            throughput(root, llm, args.throughput_rollouts, opts, cluster, "ray")
            ray.shutdown()
            print(f"driver memory, {args.memory_plan} rollouts planned (--workers 6):")
            driver_memory(root, llm, args.memory_plan, cluster, args.memory_seconds)
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"load {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
