"""Rollouts per second with 1 and 8 workers at 100 ms model latency (target ≥ 90 % of linear; peer 73 %).

Each rollout is `--steps` `echo` steps and a submit against the scripted server (its own process,
sleeping `--latency` per request). One fresh driver process per (framework, workers): a warm-up
rollout, then a timed batch. Efficiency = tput(N) / (N × tput(1)).
Usage: `uv run python -m bench.bench_throughput [--workers 8] [--steps 10] [--no-peer]`.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.common import DriverRun, ServerProcess, frameworks, machine, print_table, run_driver


def _tput(framework: str, workers: int, rollouts: int, steps: int, latency: float,
          root: Path) -> tuple[float, DriverRun]:
    with ServerProcess(framework, steps=steps, latency=latency) as server:
        run = run_driver(framework, server.url, root / f"{framework}-{workers}", steps, rollouts, workers)
    return rollouts / sum(run.wall), run


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--steps", type=int, default=10, help="echo steps before the submit")
    p.add_argument("--latency", type=float, default=0.1, help="model latency, seconds")
    p.add_argument("--rounds", type=int, default=4, help="rollouts per worker in each timed batch")
    p.add_argument("--no-peer", action="store_true", help="ours only")
    args = p.parse_args()
    chosen = frameworks(args.no_peer)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mimo-bench-") as tmp:
        for fw in chosen:
            t1, r1 = _tput(fw, 1, args.rounds, args.steps, args.latency, Path(tmp))
            tn, rn = _tput(fw, args.workers, args.rounds * args.workers, args.steps, args.latency, Path(tmp))
            name = "mimoagent" if fw == "mimo" else "mini-swe-agent 2.4.6"
            cpu_n = sum(rn.cpu) / (rn.calls or 1) * 1e3
            rows.append([name, f"{t1:.3f}", f"{tn:.3f}", f"{tn / (args.workers * t1):.0%}", f"{cpu_n:.2f}",
                         ",".join(sorted(set(r1.statuses + rn.statuses)))])
    print(f"throughput · {machine()}")
    print_table(f"rollouts/s at {args.latency * 1e3:.0f} ms model latency, {args.steps} steps + submit "
                f"(1 worker: {args.rounds} rollouts; {args.workers} workers: {args.rounds * args.workers}; "
                "target ≥ 90 %)",
                ["framework", "1 worker", f"{args.workers} workers", "efficiency", "CPU/step ms (N workers)", "exit"],
                rows)


if __name__ == "__main__":
    main()
