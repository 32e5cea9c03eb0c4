"""The peer's side of a benchmark, run under mini-swe-agent's own interpreter (stdlib + minisweagent only).

mini-swe-agent's `DefaultAgent` with its builtin `mini.yaml` (tool-calling `LitellmModel`, local
environment), pointed at the scripted server as `openai/<model>` with `api_base`. Parallel rollouts use a
thread pool, as its `mini-extra swebench` runner does. By default one warm-up
rollout (`--warmup 0` when measured from outside, as bench/whole.py does); prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from minisweagent.agents.default import DefaultAgent
from minisweagent.config import get_config_from_spec
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.litellm_model import LitellmModel

TASK = "Run `echo hi` a few times, then submit."


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _rollout(args: argparse.Namespace, config: dict, name: str) -> tuple[str, int]:
    work = args.workdir / "peer" / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "greeting.txt").write_text("hello\n")
    model_cfg = {k: v for k, v in config["model"].items() if k not in ("model_class",)}
    model_cfg |= {
        "model_name": args.model,
        "cost_tracking": "ignore_errors",
        "model_kwargs": {
            **model_cfg.get("model_kwargs", {}),
            "api_base": args.base_url + "/v1",
            "api_key": args.api_key,
        },
    }
    model = LitellmModel(**model_cfg)
    env = LocalEnvironment(**{**config.get("environment", {}), "cwd": str(work)})
    agent_cfg = {k: v for k, v in config["agent"].items() if k not in ("mode", "confirm_exit", "agent_class")}
    agent_cfg |= {"step_limit": args.steps + 5, "output_path": args.workdir / "peer" / f"{name}.traj.json"}
    agent = DefaultAgent(model, env, **agent_cfg)
    info = agent.run(TASK)
    return info.get("exit_status", ""), agent.n_calls


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--api-key", required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--rollouts", type=int, default=1)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--workdir", type=Path, required=True)
    p.add_argument("--warmup", type=int, default=1, help="unmeasured rollouts first (0 when measured from outside)")
    args = p.parse_args()
    config = get_config_from_spec("mini.yaml")

    for i in range(args.warmup):
        _rollout(args, config, f"warmup{i}")
    cpu, wall, child, results = [], [], [], []
    if args.workers == 1:
        for i in range(args.rollouts):
            c0, w0, k0 = time.process_time(), time.perf_counter(), _children_cpu()
            results.append(_rollout(args, config, f"r{i}"))
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
            child.append(_children_cpu() - k0)
    else:
        c0, w0, k0 = time.process_time(), time.perf_counter(), _children_cpu()
        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            results = list(pool.map(lambda i: _rollout(args, config, f"b{i}"), range(args.rollouts)))
        cpu, wall, child = [time.process_time() - c0], [time.perf_counter() - w0], [_children_cpu() - k0]
    print(
        json.dumps(
            {
                "cpu": cpu,
                "wall": wall,
                "child_cpu": child,
                "calls": sum(n for _, n in results),
                "statuses": [s for s, _ in results],
            }
        )
    )


if __name__ == "__main__":
    main()
