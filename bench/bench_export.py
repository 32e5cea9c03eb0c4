"""Export throughput: rollouts per second of `sft`, `rl` and `atif` on a generated output folder.

The folder comes from the one generator the viewer's bench uses too (testkit/output_folders.py),
with agent_msgs/ holding vLLM token ids so `rl` exports every rollout. Each format is exported in this
process, one after the other, on a warm page cache (the folder was just written); the figures are
rollouts read and written per second of wall time and per second of this process's CPU time (the
second is what a busy machine does not distort).

    uv run python -m bench.bench_export [--rollouts 2000] [--steps 20]
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

from mimo_core.exports.write import FORMATS, run_export
from testkit.output_folders import write_output_folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rollouts", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=20, help="model calls per rollout")
    ap.add_argument("--formats", default=",".join(FORMATS))
    args = ap.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
        f"{args.rollouts} rollouts of {args.steps} calls (token ids in agent_msgs/)"
    )
    with tempfile.TemporaryDirectory(prefix="mimo-bench-export-") as tmp:
        out = Path(tmp) / "run"
        t0 = time.perf_counter()
        write_output_folder(out, args.rollouts, steps=args.steps, long_steps=args.steps, token_ids=True)
        print(f"generated in {time.perf_counter() - t0:.1f} s")
        print(
            f"{'format':<6} {'rollouts':>9} {'rows':>8} {'wall s':>8} {'rollouts/s':>11} {'CPU s':>7} "
            f"{'rollouts/CPU-s':>15}"
        )
        for fmt in args.formats.split(","):
            t0, c0 = time.perf_counter(), time.process_time()
            report = run_export(fmt, [out], Path(tmp) / "exports" / fmt)
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            assert not report.skipped, report.skipped[:3]
            print(
                f"{fmt:<6} {report.rollouts:>9} {report.rows:>8} {dt:>8.2f} {report.rollouts / dt:>11.0f} "
                f"{dc:>7.2f} {report.rollouts / dc:>15.0f}"
            )
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
