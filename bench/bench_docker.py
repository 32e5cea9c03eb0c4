"""Docker backend figures, printed (not asserted). Run by hand:

    uv run python -m bench.bench_docker [--starts 10] [--rollouts-per-row 2] [--workers 1 4 8]

1. Container start + first command: `DockerEnvironment.start()` then `execute("true")`, and `stop()`.
2. Rollouts per minute through the real CLI on the demo dataset (configs/demo_docker.yaml), with the
   default agent against the scripted LLM server (3 bash steps, then submit), for each worker count.
The engine and base image come from testkit/dockerd.py (started here if needed).
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

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "examples" / "demo.jsonl"


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p * (len(values) - 1))))]


def bench_start(n: int) -> None:
    from mimo_core.config import EnvironmentConfig
    from mimo_core.environments.base import SandboxSpec
    from mimo_core.environments.docker.environment import DockerEnvironment
    from testkit.dockerd import BASE_IMAGE

    rows: dict[str, list[float]] = {
        "start": [],
        "first command": [],
        "start+first": [],
        "next command": [],
        "write+read file": [],
        "stop": [],
    }
    for network in (False, True):
        for k in rows:
            rows[k].clear()
        for _ in range(n):
            env = DockerEnvironment(
                SandboxSpec(image=BASE_IMAGE, network=network, labels={"mimoagent.run_id": "bench"}),
                EnvironmentConfig(environment_class="docker"),
            )
            t0 = time.perf_counter()
            env.start()
            t1 = time.perf_counter()
            env.execute("true")
            t2 = time.perf_counter()
            env.execute("echo hi")
            t3 = time.perf_counter()
            env.write_file("/tmp/f", b"x" * 1000)
            env.read_file("/tmp/f")
            t4 = time.perf_counter()
            env.stop()
            t5 = time.perf_counter()
            for key, v in zip(rows, (t1 - t0, t2 - t1, t2 - t0, t3 - t2, t4 - t3, t5 - t4), strict=True):
                rows[key].append(v)
        print(f"\ncontainer latency, {n} containers, network={'bridge' if network else 'none'} (seconds)")
        print(f"{'':18} {'median':>8} {'p90':>8} {'max':>8}")
        for key, vals in rows.items():
            print(f"{key:18} {statistics.median(vals):8.3f} {_pct(vals, 0.9):8.3f} {max(vals):8.3f}")


def bench_rollouts(workers: list[int], per_row: int) -> None:
    from testkit.scripted_llm import ScriptedLLM, call, turns

    n_rows = len(DEMO.read_text().splitlines())
    script = turns(
        call("bash", command="ls"),
        call("bash", command="git status --short"),
        call("bash", command="echo done"),
        call("submit"),
    )
    print(
        f"\nrollouts per minute: demo dataset ({n_rows} rows x {per_row}), default agent, scripted model, "
        f"{os.cpu_count()} CPUs"
    )
    print(f"{'workers':>8} {'rollouts':>9} {'wall s':>8} {'per min':>8}")
    with ScriptedLLM(script) as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.openai_base_url,
            "OPENAI_API_KEY": "sk-bench",
            "MIMOAGENT_MODEL_NAME": "scripted-model",
            "MIMOAGENT_OBSERVERS": "0",
        }
        for w in workers:
            out = Path(tempfile.mkdtemp(prefix=f"mimo-bench-docker-{w}-"))
            t0 = time.perf_counter()
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "mimo_core.cli",
                    "-c",
                    "configs/demo_docker.yaml",
                    "--dataset",
                    str(DEMO),
                    "--num-rollouts",
                    str(per_row),
                    "--workers",
                    str(w),
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
                print(f"{w:>8} failed: {proc.stderr[-1500:]}")
                continue
            done = sum(1 for _ in (out / "results.jsonl").open())
            print(f"{w:>8} {done:>9} {wall:8.1f} {done / wall * 60:8.1f}")
            shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--starts", type=int, default=10)
    p.add_argument("--rollouts-per-row", type=int, default=2)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 4, 8])
    args = p.parse_args()
    from testkit.dockerd import use_dockerd

    with use_dockerd() as info:  # stopped after, unless another user still holds it
        os.environ["DOCKER_HOST"] = info.docker_host
        print(
            f"engine {info.docker_host} ({info.storage_driver}), setup {info.setup_seconds:.1f}s"
            + (" (reused)" if info.reused else "")
        )
        bench_start(args.starts)
        bench_rollouts(args.workers, args.rollouts_per_row)


if __name__ == "__main__":
    main()
