"""Start to first model request, ours beside mini-swe-agent's (target ≤ 0.1 × the peer's median).

Wall time from launching a fresh process through the console script (`mimoagent`; the peer's `mini`)
to the first request arriving at the scripted server, which logs arrivals on the same system-wide
monotonic clock. One discarded launch first warms the page cache and bytecode; then the median of
`--runs`. Ours runs a second time with PYTHONDONTWRITEBYTECODE=1: only the bytecode compiled at install
(scripts/bytecode_hook.py) can help it. Usage: `uv run python -m bench.bench_startup [--runs 5] [--no-peer]`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import (
    API_KEY,
    MODEL,
    PEER_VENV,
    ServerProcess,
    frameworks,
    machine,
    median,
    mimo_env,
    peer_env,
    print_table,
    write_mimo_config,
    write_task,
)


def _mimo_argv(server: ServerProcess, work: Path, i: int) -> tuple[list[str], dict[str, str], Path]:
    cfg = write_mimo_config(work, server.openai_base_url, 0)
    data = write_task(work / "task", 1)
    script = Path(sys.executable).with_name("mimoagent")
    return [str(script), "-c", str(cfg), "--dataset", str(data), "-o", str(work / f"out-{i}")], mimo_env(), work


def _peer_argv(server: ServerProcess, work: Path, i: int) -> tuple[list[str], dict[str, str], Path]:
    cwd = work / f"peer-{i}"
    cwd.mkdir(parents=True, exist_ok=True)
    argv = [
        str(PEER_VENV / "bin" / "mini"),
        "-y",
        "--exit-immediately",
        "-m",
        f"openai/{MODEL}",
        "-t",
        "Submit right away.",
        "-o",
        str(work / f"peer-{i}.traj.json"),
        "-c",
        "mini.yaml",
        "-c",
        f"model.model_kwargs.api_base={server.openai_base_url}",
        "-c",
        f"model.model_kwargs.api_key={API_KEY}",
        "-c",
        "model.cost_tracking=ignore_errors",
        "-c",
        f"environment.cwd={cwd}",
    ]
    return argv, peer_env(work / "mswea-config"), cwd


def _launches(framework: str, runs: int, root: Path, no_pyc_writes: bool = False) -> list[float]:
    build = _mimo_argv if framework == "mimo" else _peer_argv
    times = []
    with ServerProcess(framework, steps=0, log_dir=root) as server:
        for i in range(runs + 1):
            argv, env, cwd = build(server, root / framework, i)
            if no_pyc_writes:
                env = {**env, "PYTHONDONTWRITEBYTECODE": "1"}
            seen = len(server.arrivals())
            t0 = time.monotonic()
            proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
            arrivals = server.arrivals()[seen:]
            if proc.returncode != 0 or not arrivals:
                raise RuntimeError(f"{framework} launch failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
            if i > 0:
                times.append(arrivals[0] - t0)
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--no-peer", action="store_true", help="ours only")
    args = p.parse_args()
    chosen = frameworks(args.no_peer)
    medians: dict[str, float] = {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="mimo-bench-") as tmp:
        for fw in chosen:
            times = _launches(fw, args.runs, Path(tmp))
            name = "mimoagent" if fw == "mimo" else "mini-swe-agent 2.4.6 (`mini`)"
            medians[name] = median(times)
            rows.append([name, f"{median(times):.2f}", f"{min(times):.2f}", f"{max(times):.2f}"])
            if fw == "mimo":  # bytecode made at install must do: nothing may be written at run time
                (Path(tmp) / "no-pyc").mkdir()
                times = _launches(fw, args.runs, Path(tmp) / "no-pyc", no_pyc_writes=True)
                medians["mimoagent, PYTHONDONTWRITEBYTECODE=1"] = median(times)
                rows.append(
                    [
                        "mimoagent, PYTHONDONTWRITEBYTECODE=1",
                        f"{median(times):.2f}",
                        f"{min(times):.2f}",
                        f"{max(times):.2f}",
                    ]
                )
    peer = medians.get("mini-swe-agent 2.4.6 (`mini`)")
    for row in rows:  # the median as a fraction of the peer's, taken in the same run (target ≤ 0.1 ×)
        row.append(f"{medians[row[0]] / peer:.2f}x" if peer and not row[0].startswith("mini") else "")
    print(f"startup · {machine()}")
    print_table(
        f"launch → first model request, s (fresh process via the console script, {args.runs} runs; "
        "target ≤ 0.1 × the peer's)",
        ["framework", "median", "min", "max", "× peer"],
        rows,
    )


if __name__ == "__main__":
    main()
