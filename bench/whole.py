"""One whole run of a framework, measured from outside over its whole process tree.

Ours runs as users run it: the `mimoagent` console script on a JSONL dataset, in a fresh process. The
peer runs `bench/peer_mini.py` (mini-swe-agent's `DefaultAgent` on a thread pool) in a fresh process of
its own interpreter, with no warm-up rollout. Both talk to the same scripted server (its own process,
never counted) and do the same task; calls are counted by the server, so both are counted alike.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import (
    API_KEY,
    MODEL,
    REPO,
    ServerProcess,
    mimo_env,
    peer_env,
    peer_python,
    write_mimo_config,
    write_task,
)
from bench.tree import _CLK_TCK, TreeRun, children_of, cpu_ticks, run_tree, stat_fields
from mimo_assets.cli_recording.address import IDLE_ENV


@dataclass(frozen=True)
class Case:
    """A framework and its settings. `recording`: the CLI's observers (the Dagster recording) on: by
    default the run only leaves its registry entry for Dagster to record later; `live`: the opt-in live
    recording through the recorder (MIMOAGENT_DAGSTER_LIVE=1)."""

    label: str
    framework: str  # "mimo" | "peer"
    recording: bool = False
    sandbox: str = "none"
    live: bool = False
    # live: "warm" = the recorder an earlier run started serves this one (a user's next run; its CPU during
    # the run is counted from /proc), "cold" = each run starts its own and it exits when done
    recorder: str = "warm"


@dataclass
class CaseRun:
    case: Case
    tree: TreeRun
    calls: int
    arrivals: list[tuple[float, ...]] = field(default_factory=list)

    @property
    def cpu_per_step_ms(self) -> float:
        return self.tree.cpu_s / max(self.calls, 1) * 1e3

    @property
    def first_request_s(self) -> float:
        return self.arrivals[0][0] - self.tree.started if self.arrivals else float("nan")

    @property
    def tail_s(self) -> float:
        """From the last model request to the runner's exit (its last step, grading and shutdown)."""
        return self.tree.exited - self.arrivals[-1][0] if self.arrivals else float("nan")

    @property
    def tree_tail_s(self) -> float:
        return self.tree.tree_exited - self.arrivals[-1][0] if self.arrivals else float("nan")

    def breakdown(self) -> tuple[float, float, float, float]:
        """Where the tree's CPU went, from the server's notes (`sample_cpu=True`, one worker): start-up
        to the first request (s), between one rollout's last call and the next one's first (ms per
        rollout: grading, teardown, set-up), per call inside a rollout (ms), after the last request (s)."""
        rows = [r for r in self.arrivals if len(r) >= 3]
        if not rows:
            return (float("nan"),) * 4
        between = [b[2] - a[2] for a, b in zip(rows, rows[1:], strict=False) if int(b[1]) == 1]
        inside = [b[2] - a[2] for a, b in zip(rows, rows[1:], strict=False) if int(b[1]) != 1]
        mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
        return rows[0][2], mean(between) * 1e3, mean(inside) * 1e3, self.tree.cpu_s - rows[-1][2]

    def step_cost_ms(self, a: int, b: int) -> float:
        """Whole-tree CPU per call between call a and call b, pooled over the rollouts (a sum of ticks,
        so the 10 ms quantisation averages out); needs `sample_cpu=True` and one worker."""
        rollouts: list[dict[int, float]] = []
        for row in self.arrivals:
            if len(row) < 3:
                continue
            if int(row[1]) == 1 or not rollouts:
                rollouts.append({})
            rollouts[-1][int(row[1])] = row[2]
        spans = [r[b] - r[a] for r in rollouts if a in r and b in r]
        return sum(spans) / (len(spans) * (b - a)) * 1e3 if spans else float("nan")


def _mimo_argv(
    case: Case, server: ServerProcess, work: Path, instances: int, steps: int, workers: int
) -> tuple[list[str], dict[str, str]]:
    cfg = write_mimo_config(work, server.openai_base_url, steps)
    if case.sandbox != "none":
        import yaml

        data = yaml.safe_load(cfg.read_text())
        data["environment"]["sandbox"] = case.sandbox
        cfg.write_text(yaml.safe_dump(data))
    dataset = write_task(work / "task", instances)
    argv = [
        str(Path(sys.executable).with_name("mimoagent")),
        "-c",
        str(cfg),
        "--dataset",
        str(dataset),
        "-o",
        str(work / f"out-{time.monotonic_ns()}"),
        "--workers",
        str(workers),
    ]
    env = mimo_env()
    if case.recording:
        env.pop("MIMOAGENT_OBSERVERS", None)
    if case.live:
        env["MIMOAGENT_DAGSTER_LIVE"] = "1"
        env[IDLE_ENV] = "60" if case.recorder == "warm" else "0"
    # A Dagster home of the bench's own (the recording writes there), kept between runs like a user's.
    env["DAGSTER_HOME"] = str(work.parent / "dagster_home")
    Path(env["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    return argv, env


def _peer_argv(
    server: ServerProcess, work: Path, instances: int, steps: int, workers: int
) -> tuple[list[str], dict[str, str]]:
    py = peer_python()
    if py is None:
        raise RuntimeError("mini-swe-agent is not installed")
    argv = [
        str(py),
        str(REPO / "bench" / "peer_mini.py"),
        "--base-url",
        server.url,
        "--model",
        f"openai/{MODEL}",
        "--api-key",
        API_KEY,
        "--steps",
        str(steps),
        "--rollouts",
        str(instances),
        "--workers",
        str(workers),
        "--workdir",
        str(work),
        "--warmup",
        "0",
    ]
    return argv, peer_env(work / "mswea-config")


def run_case(
    case: Case, root: Path, instances: int, steps: int, workers: int = 1, latency: float = 0.0, sample_cpu: bool = False
) -> CaseRun:
    """A fresh run of `instances` rollouts of `steps` `echo` steps + submit, measured over its tree."""
    work = root / case.label.replace(" ", "-").replace(",", "")
    work.mkdir(parents=True, exist_ok=True)
    pidfile = work / "runner.pid" if sample_cpu else None
    if pidfile is not None:
        pidfile.write_text("")
    recorders = _our_recorders() if case.live else []
    before = sum(cpu_ticks(p) for p in recorders)
    with ServerProcess(case.framework, steps=steps, latency=latency, log_dir=work, watch=pidfile) as server:
        if case.framework == "mimo":
            argv, env = _mimo_argv(case, server, work, instances, steps, workers)
        else:
            argv, env = _peer_argv(server, work, instances, steps, workers)
        assert server.proc is not None
        tree = run_tree(argv, env, REPO, keep={server.proc.pid, *recorders}, pidfile=pidfile)
        rows = server.arrival_rows()
    if recorders:  # a warm recorder is not in the run's tree: add what it spent meanwhile
        deadline = time.monotonic() + 120
        while any(children_of(p) for p in recorders) and time.monotonic() < deadline:
            time.sleep(0.05)  # the fork recording this run: reaped by the recorder, then in its cutime
        tree.cpu_s += (sum(cpu_ticks(p) for p in recorders) - before) / _CLK_TCK
        if tree.leftovers:
            raise RuntimeError(f"{case.label}: the run started a recorder of its own instead of using the warm one")
    if tree.returncode != 0:
        raise RuntimeError(f"{case.label} failed ({tree.returncode}):\n{tree.stderr[-3000:]}")
    expected = instances * (steps + 1)
    if len(rows) != expected:
        raise RuntimeError(f"{case.label}: {len(rows)} model calls, expected {expected}:\n{tree.stderr[-2000:]}")
    return CaseRun(case, tree, len(rows), rows)


def _our_recorders() -> list[int]:
    """Warm recorders an earlier (warm-up) run started: orphans handed to this process, the subreaper."""
    found = []
    for pid in children_of(os.getpid()):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"mimo_assets.cli_recording.recorder" in cmd and stat_fields(pid)[0] != "Z":
            found.append(pid)
    return found


def stop_recorders() -> None:
    """End (and reap) the warm recorders of this bench, so no later case's tree inherits them."""
    for pid in _our_recorders():
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
