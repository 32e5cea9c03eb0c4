"""Framework CPU per agent step, ours beside mini-swe-agent's (target ≤ 2.5 ms; the peer was 7.6 ms).

The scripted server answers at zero latency from its own process: `--steps` bash calls running `echo`,
then a submit. Each framework runs in a fresh process, does one warm-up rollout, then `--rollouts`
measured ones; per step = that process's CPU over the whole rollout (setup, every model call and command,
grading, files) divided by its model calls, nothing subtracted. The marginal figure (difference against
a 10-step rollout) leaves out the fixed per-rollout cost. Also prints the local environment's CPU per
command. Usage: `uv run python -m bench.bench_overhead [--steps 50] [--rollouts 5] [--no-peer]`.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import STEP_COMMAND, DriverRun, ServerProcess, frameworks, machine, median, print_table, run_driver

SHORT = 10


def _measure(framework: str, steps: int, rollouts: int, root: Path) -> DriverRun:
    with ServerProcess(framework, steps=steps) as server:
        return run_driver(framework, server.url, root / f"{framework}-{steps}", steps, rollouts)


def _per_step(run: DriverRun, rollouts: int) -> tuple[float, float, float]:
    calls = run.calls / rollouts
    return median(run.cpu) / calls * 1e3, median(run.wall) / calls * 1e3, median(run.child_cpu) / calls * 1e3


def _env_command_cpu(root: Path, sandbox: str, n: int = 200) -> tuple[float, float]:
    """CPU of this process and wall per `execute(echo)` on a started LocalEnvironment (ms)."""
    from mimo_core.config import EnvironmentConfig
    from mimo_core.environments.base import SandboxSpec
    from mimo_core.environments.local import LocalEnvironment

    env = LocalEnvironment(SandboxSpec(cwd="/testbed", timeout=10.0),
                           EnvironmentConfig(sandbox=sandbox, backend_kwargs={"root": str(root / f"env-{sandbox}")}))
    env.start()
    try:
        for _ in range(5):
            env.execute(STEP_COMMAND)
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(n):
            env.execute(STEP_COMMAND)
        return (time.process_time() - c0) / n * 1e3, (time.perf_counter() - w0) / n * 1e3
    finally:
        env.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=50, help="echo steps before the submit")
    p.add_argument("--rollouts", type=int, default=5, help="measured rollouts per framework (median)")
    p.add_argument("--no-peer", action="store_true", help="ours only")
    args = p.parse_args()

    chosen = frameworks(args.no_peer)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mimo-bench-") as tmp:
        root = Path(tmp)
        for fw in chosen:
            long = _measure(fw, args.steps, args.rollouts, root)
            short = _measure(fw, SHORT, args.rollouts, root)
            cpu, wall, child = _per_step(long, args.rollouts)
            calls_long, calls_short = long.calls / args.rollouts, short.calls / args.rollouts
            marginal = (median(long.cpu) - median(short.cpu)) / (calls_long - calls_short) * 1e3
            fixed = median(short.cpu) * 1e3 - marginal * calls_short
            name = "mimoagent" if fw == "mimo" else "mini-swe-agent 2.4.6"
            rows.append([name, f"{calls_long:.0f}", f"{cpu:.2f}", f"{marginal:.2f}", f"{fixed:.0f}",
                         f"{wall:.2f}", f"{child:.2f}", ",".join(sorted(set(long.statuses)))])
        env_rows = [["none", *(f"{x:.2f}" for x in _env_command_cpu(root, "none"))]]
        if shutil.which("bwrap"):
            env_rows.append(["bwrap", *(f"{x:.2f}" for x in _env_command_cpu(root, "bwrap"))])

    print(f"overhead · {machine()}")
    print_table(f"framework CPU per agent step (scripted server at 0 latency, `{STEP_COMMAND}`, "
                f"median of {args.rollouts} rollouts; target ≤ 2.5 ms)",
                ["framework", "calls", "CPU/step ms", "marginal ms", "fixed ms/rollout", "wall/step ms",
                 "shell CPU/step ms", "exit"], rows)
    print_table(f"LocalEnvironment.execute(`{STEP_COMMAND}`), this process only, 200 calls",
                ["sandbox", "CPU/command ms", "wall/command ms"], env_rows)


if __name__ == "__main__":
    main()
