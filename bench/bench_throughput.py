"""Rollouts per second with 1 and N workers at 100 ms model latency, whole process tree, beside the peer.

Each run is a fresh process measured from outside (bench/whole.py): `--rounds` rollouts with 1 worker,
then `--rounds × N` with N workers, `--steps` `echo` steps + submit each, the scripted server sleeping
`--latency` per request. Throughput = rollouts / (runner exit − first model request), so the start-up
import time is left out and the exit tail is in. Efficiency = tput(N) / (N × tput(1)); linear is 100 %.
CPU/step is the whole tree's CPU over the N-worker run ÷ its model calls.
Usage: `uv run python -m bench.bench_throughput [--workers 8] [--steps 10] [--no-peer]`.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.common import frameworks, machine, print_table
from bench.whole import Case, CaseRun, run_case


def _tput(run: CaseRun, rollouts: int) -> float:
    return rollouts / (run.tree.exited - run.arrivals[0][0])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--steps", type=int, default=10, help="echo steps before the submit")
    p.add_argument("--latency", type=float, default=0.1, help="model latency, seconds")
    p.add_argument("--rounds", type=int, default=4, help="rollouts per worker in each timed batch")
    p.add_argument("--no-peer", action="store_true", help="ours only")
    args = p.parse_args()
    cases = [Case("mimoagent, recording off", "mimo")]
    if "peer" in frameworks(args.no_peer):
        cases.append(Case("mini-swe-agent 2.4.6", "peer"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="mimo-bench-") as tmp:
        root = Path(tmp)
        for case in cases:
            run_case(case, root / "warmup", 1, 1)
            one = run_case(case, root / "w1", args.rounds, args.steps, 1, args.latency)
            many = run_case(case, root / "wn", args.rounds * args.workers, args.steps, args.workers, args.latency)
            t1, tn = _tput(one, args.rounds), _tput(many, args.rounds * args.workers)
            rows.append(
                [
                    case.label,
                    f"{t1:.3f}",
                    f"{tn:.3f}",
                    f"{tn / (args.workers * t1):.0%}",
                    f"{many.cpu_per_step_ms:.2f}",
                    f"{many.tree.maxrss_mb:.0f}",
                ]
            )
    print(f"throughput · {machine()}")
    print_table(
        f"rollouts/s at {args.latency * 1e3:.0f} ms model latency, {args.steps} steps + submit, whole "
        f"process tree (1 worker: {args.rounds} rollouts; {args.workers} workers: "
        f"{args.rounds * args.workers}; linear = 100 %)",
        ["run", "1 worker", f"{args.workers} workers", "efficiency", "CPU/step ms (N workers)", "peak RSS MB"],
        rows,
    )


if __name__ == "__main__":
    main()
