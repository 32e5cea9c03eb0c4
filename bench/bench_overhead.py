"""CPU per agent step over the whole process tree, start-up, exit tail and peak RSS, beside mini-swe-agent.

Every figure is taken from outside (bench/tree.py): the runner is started as a fresh process and its
CPU is the rusage of its whole tree (the runner, its shells, bwrap, the Dagster recording child, and
orphans, which come back to the bench as child subreaper), divided by the model calls the scripted
server answered. Each case gets one discarded warm-up run first (bytecode caches, the Dagster home),
like a user's second run. The second table notes the tree's CPU at each request (/proc) during long
rollouts: the cost of a step around step 20 against around step 200 shows whether a rollout's cost grows
with its length; the notes also split the main runs' CPU into start-up, between rollouts, inside them
and after the last request. Usage: `uv run python -m bench.bench_overhead [--instances 20] [--steps 20] [--no-peer]`.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import STEP_COMMAND, frameworks, machine, print_table
from bench.whole import Case, CaseRun, run_case, stop_recorders

PEER = "mini-swe-agent 2.4.6"
DEFAULT, OFF = "mimoagent", "mimoagent, recording off"
TARGET = {DEFAULT: 0.3, "mimoagent, live recording": 0.3, OFF: 0.3, "mimoagent, bwrap, recording off": 0.4}


def _cases(no_peer: bool, bwrap: bool) -> list[Case]:
    cases = [
        Case(DEFAULT, "mimo", recording=True),  # leaves its registry entry: Dagster records it afterwards
        Case("mimoagent, live recording", "mimo", recording=True, live=True),  # opt-in, warm recorder
        Case(OFF, "mimo"),
    ]
    if bwrap and shutil.which("bwrap"):
        cases.append(Case("mimoagent, bwrap, recording off", "mimo", sandbox="bwrap"))
    if "peer" in frameworks(no_peer):
        cases.append(Case(PEER, "peer"))
    return cases


def _main_table(runs: list[CaseRun], instances: int, steps: int) -> None:
    peer = next((r for r in runs if r.case.framework == "peer"), None)
    rows = []
    for r in runs:
        ratio, target = "", ""
        if peer is not None and r is not peer:
            ratio = f"{r.cpu_per_step_ms / peer.cpu_per_step_ms:.2f}x"
            target = f"≤ {TARGET[r.case.label]}x"
        tail_target = "≤ 0.3 s" if r.case.framework == "mimo" and not r.case.recording else ""
        rows.append(
            [
                r.case.label,
                str(r.calls),
                f"{r.cpu_per_step_ms:.2f}",
                ratio,
                target,
                f"{r.first_request_s:.2f}",
                f"{r.tail_s:.2f}",
                tail_target,
                f"{r.tree.maxrss_mb:.0f}",
                f"{r.tree.exited - r.tree.started:.1f}",
                str(r.tree.leftovers),
            ]
        )
    print_table(
        f"whole process tree, {instances} instances × {steps} `{STEP_COMMAND}` steps + submit, 1 worker, "
        "scripted server at 0 latency",
        [
            "run",
            "calls",
            "CPU/step ms",
            "× peer",
            "target",
            "start→1st request s",
            "exit tail s",
            "target",
            "peak RSS MB",
            "wall s",
            "left running",
        ],
        rows,
    )
    by_label = {r.case.label: r for r in runs}
    if DEFAULT in by_label and OFF in by_label:
        on, off = by_label[DEFAULT].tree.cpu_s, by_label[OFF].tree.cpu_s
        print(
            f"default run's whole-tree CPU {on:.2f} s = {on / off:.2f}x the recording-off run's {off:.2f} s "
            f"(target ≤ 1.10x); left running after the CLI: {by_label[DEFAULT].tree.leftovers}\n"
        )


def _breakdown_table(runs: list[CaseRun]) -> None:
    rows = []
    for r in runs:
        start, between, inside, after = r.breakdown()
        rows.append([r.case.label, f"{start:.2f}", f"{between:.1f}", f"{inside:.2f}", f"{after:.2f}"])
    print_table(
        "where the whole tree's CPU went (/proc at each request, 10 ms ticks)",
        [
            "run",
            "start→1st request s",
            "between rollouts ms/rollout",
            "inside a rollout ms/step",
            "after the last request s",
        ],
        rows,
    )


def _growth_table(runs: list[CaseRun], long: int) -> None:
    """40-call windows centred on steps 21 and 201, pooled over the rollouts. /proc counts 10 ms ticks, so
    each rollout's window is off by up to a tick per process: ours (~1.5 ms a step, ~60 ms a window)
    needs ~20 rollouts for the ratio to hold to a few percent."""
    rows = []
    for r in runs:
        early, late = r.step_cost_ms(1, 41), r.step_cost_ms(181, 221)
        rows.append([r.case.label, f"{early:.2f}", f"{late:.2f}", f"{late / early:.2f}", "≤ 1.20"])
    print_table(
        f"whole-tree CPU per step within {long}-step rollouts (/proc at each request: calls 1→41 and "
        "181→221, pooled over the rollouts)",
        ["run", "around step 20 ms", "around step 200 ms", "ratio", "target"],
        rows,
    )


def _env_command_cpu(root: Path, sandbox: str, n: int = 200) -> tuple[float, float, float]:
    """Per `execute(echo)` on a started LocalEnvironment: this process's CPU, its children's and the
    sandbox's processes' (read from /proc by their MIMO_SANDBOX marker before the stop: a bwrap
    sandbox's inner processes are reaped by whoever inherits them, not by us), wall (ms)."""
    from bench.bench_bash_tool import _cpu_of
    from mimo_core.config import EnvironmentConfig
    from mimo_core.environments.base import SandboxSpec
    from mimo_core.environments.local.environment import LocalEnvironment
    from mimo_core.environments.local.procs import SANDBOX_VAR, marked_pids

    def children() -> float:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ru.ru_utime + ru.ru_stime

    env = LocalEnvironment(
        SandboxSpec(cwd="/testbed", timeout=10.0),
        EnvironmentConfig(sandbox=sandbox, backend_kwargs={"root": str(root / f"env-{sandbox}")}),
    )
    env.start()
    try:
        for _ in range(5):
            env.execute(STEP_COMMAND)
        pids = marked_pids(SANDBOX_VAR, env.sandbox_id)
        c0, k0, s0, w0 = time.process_time(), children(), _cpu_of(pids), time.perf_counter()
        for _ in range(n):
            env.execute(STEP_COMMAND)
        wall = time.perf_counter() - w0
        pids = sorted(set(pids) | set(marked_pids(SANDBOX_VAR, env.sandbox_id)))
        c1, k1, s1 = time.process_time(), children(), _cpu_of(pids)
    finally:
        env.stop()
    return (c1 - c0) / n * 1e3, (k1 - k0 + s1 - s0) / n * 1e3, wall / n * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--instances", type=int, default=20)
    p.add_argument("--steps", type=int, default=20, help="echo steps before the submit")
    p.add_argument("--long", type=int, default=221, help="steps of the long rollouts (growth table; 0: skip)")
    p.add_argument(
        "--long-rollouts",
        type=int,
        default=20,
        help="long rollouts of ours; the peer's step costs ~15x more CPU, so it runs a quarter as "
        "many (at least 2) for as many 10 ms ticks per window",
    )
    p.add_argument("--no-peer", action="store_true", help="ours only")
    p.add_argument("--no-bwrap", action="store_true", help="skip the bwrap case")
    args = p.parse_args()

    cases = _cases(args.no_peer, not args.no_bwrap)
    print(f"overhead · {machine()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="mimo-bench-") as tmp:
        root = Path(tmp)
        runs = []
        for case in cases:
            run_case(case, root, 1, 1)  # a user's earlier run: caches, the same Dagster home, a warm recorder
            runs.append(run_case(case, root, args.instances, args.steps, sample_cpu=True))
            stop_recorders()
        _main_table(runs, args.instances, args.steps)
        _breakdown_table(runs)
        if args.long:
            long_cases = [c for c in cases if c.label in ("mimoagent, recording off", PEER)]
            _growth_table(
                [
                    run_case(
                        c,
                        root / "long",
                        args.long_rollouts if c.framework == "mimo" else max(2, args.long_rollouts // 4),
                        args.long,
                        sample_cpu=True,
                    )
                    for c in long_cases
                ],
                args.long,
            )
        env_rows = [["none", *(f"{x:.2f}" for x in _env_command_cpu(root, "none"))]]
        if shutil.which("bwrap"):
            env_rows.append(["bwrap", *(f"{x:.2f}" for x in _env_command_cpu(root, "bwrap"))])
    print_table(
        f"LocalEnvironment.execute(`{STEP_COMMAND}`), 200 calls",
        ["sandbox", "CPU/command ms (bench process)", "children + sandbox CPU/command ms", "wall/command ms"],
        env_rows,
    )


if __name__ == "__main__":
    main()
