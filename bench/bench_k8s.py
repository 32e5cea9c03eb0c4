"""Kubernetes backend overhead against the docker backend, on the API-server stand-in. Printed, not
asserted. Run by hand:

    uv run python -m bench.bench_k8s [--starts 10] [--calls 50] [--rollouts-per-row 1] [--workers 4]

The stand-in (testkit/k8s_standin.py) backs each pod with a container of the same test dockerd
the docker backend uses, so the difference between the two columns is the framework side of a pod: the
kubernetes client, the pod create + watch, exec over the WebSocket channel protocol, tar over exec and the
stand-in's own relay (an aiohttp process on 127.0.0.1). A real cluster adds scheduling, image pulls and
the kubelet's exec path, none of which is measured here.

1. Per-operation latency: start (+ first command), a command, a bash-tool call (persistent shell), a 1 kB
   write + read, stop: `--starts` sandboxes per backend, `--calls` commands each.
2. Rollouts per minute through the real CLI on the demo dataset (configs/demo_docker.yaml, and the same
   with environment_class: kubernetes), default agent, scripted model: 3 bash steps, then submit.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "examples" / "demo.jsonl"
OPS = ("start+first", "command", "bash tool call", "write+read 1kB", "stop")


def _env(backend: str) -> Any:
    from mimo_core.config import EnvironmentConfig
    from mimo_core.environments.base import SandboxSpec
    from mimo_core.environments.registry import environment_class
    from testkit.dockerd import BASE_IMAGE

    spec = SandboxSpec(image=BASE_IMAGE, labels={"mimoagent.run_id": "bench", "mimoagent.instance": "b"})
    return environment_class(backend)(spec, EnvironmentConfig(environment_class=backend))


def bench_ops(starts: int, calls: int) -> None:
    from mimo_core.tools.bash import BashTool

    rows: dict[str, dict[str, list[float]]] = {b: {k: [] for k in OPS} for b in ("docker", "kubernetes")}
    bash = BashTool(default_timeout=30)
    for _ in range(starts):
        for backend, got in rows.items():
            env = _env(backend)
            t0 = time.perf_counter()
            env.start()
            env.execute("true")
            got["start+first"].append(time.perf_counter() - t0)
            for _ in range(calls):
                t = time.perf_counter()
                env.execute("echo hi")
                got["command"].append(time.perf_counter() - t)
                t = time.perf_counter()
                bash.run({"command": "echo hi"}, env)
                got["bash tool call"].append(time.perf_counter() - t)
            t = time.perf_counter()
            env.write_file("/tmp/f", b"x" * 1000)
            env.read_file("/tmp/f")
            got["write+read 1kB"].append(time.perf_counter() - t)
            t = time.perf_counter()
            env.stop()
            got["stop"].append(time.perf_counter() - t)
    print(
        f"\nper-operation latency, median ms ({starts} sandboxes per backend, {calls} calls each, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})"
    )
    print(f"{'':16} {'docker':>9} {'pod':>9} {'pod - docker':>13}")
    for op in OPS:
        d, k = (statistics.median(rows[b][op]) * 1000 for b in ("docker", "kubernetes"))
        print(f"{op:16} {d:9.1f} {k:9.1f} {k - d:13.1f}")


def bench_rollouts(workers: int, per_row: int) -> None:
    from testkit.scripted_llm import ScriptedLLM, call, turns

    script = turns(
        call("bash", command="ls"),
        call("bash", command="git status --short"),
        call("bash", command="echo done"),
        call("submit"),
    )
    cfg = yaml.safe_load((REPO / "configs" / "demo_docker.yaml").read_text())
    cfg["environment"]["environment_class"] = "kubernetes"
    tmp = Path(tempfile.mkdtemp(prefix="mimo-bench-k8s-"))
    k8s_cfg = tmp / "demo_k8s.yaml"
    k8s_cfg.write_text(yaml.safe_dump(cfg))
    n_rows = len(DEMO.read_text().splitlines())
    print(
        f"\nrollouts per minute: demo dataset ({n_rows} rows x {per_row}), {workers} workers, default agent, "
        f"scripted model (3 bash steps + submit), load {os.getloadavg()[0]:.1f}"
    )
    print(f"{'backend':>11} {'rollouts':>9} {'wall s':>8} {'per min':>8}")
    with ScriptedLLM(script) as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.openai_base_url,
            "OPENAI_API_KEY": "sk-bench",
            "MIMOAGENT_MODEL_NAME": "scripted-model",
            "MIMOAGENT_OBSERVERS": "0",
        }
        for name, config in (("docker", "configs/demo_docker.yaml"), ("kubernetes", str(k8s_cfg))):
            out = tmp / name
            t0 = time.perf_counter()
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "mimo_core.cli",
                    "-c",
                    config,
                    "--dataset",
                    str(DEMO),
                    "--num-rollouts",
                    str(per_row),
                    "--workers",
                    str(workers),
                    "-o",
                    str(out),
                ],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
            )
            wall = time.perf_counter() - t0
            if proc.returncode != 0:
                print(f"{name:>11} failed: {proc.stderr[-1500:]}")
                continue
            done = sum(1 for _ in (out / "results.jsonl").open())
            print(f"{name:>11} {done:>9} {wall:8.1f} {done / wall * 60:8.1f}")
    shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--starts", type=int, default=10)
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--rollouts-per-row", type=int, default=1)
    p.add_argument("--workers", type=int, default=4)
    args = p.parse_args()
    from testkit.dockerd import use_dockerd
    from testkit.k8s_standin import StandIn

    with use_dockerd() as info:
        os.environ["DOCKER_HOST"] = info.docker_host
        standin = StandIn(info.docker_host)
        standin.start()
        tmp = Path(tempfile.mkdtemp(prefix="mimo-bench-kubeconfig-"))
        os.environ["KUBECONFIG"] = str(standin.write_kubeconfig(tmp / "kubeconfig"))
        try:
            print(f"engine {info.docker_host} ({info.storage_driver}); stand-in {standin.url}")
            bench_ops(args.starts, args.calls)
            bench_rollouts(args.workers, args.rollouts_per_row)
        finally:
            standin.stop()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
