"""Against a real model server: per rollout, the server's own time beside the framework's.

llama.cpp's server (`testkit/llama_server.py`: the `xllamacpp` wheel, SmolLM2-135M, one thread) runs in
its own process; rollouts of the default agent (chat, `bash` only, 3 steps, 48-token replies, token ids
asked for) run one after another in this process. Per rollout:

- server: what llama.cpp says it spent (`timings.prompt_ms + predicted_ms` of every reply);
- model calls: the client-side wall time of the calls (server + HTTP + the server's queue);
- agent loop: the loop's wall time (model calls, tool commands, recording);
- framework CPU: this process's own CPU over the rollout (getrusage RUSAGE_SELF: the agent, the clients,
  the recording; not the server, not the tool commands, which are child processes);
- framework share: framework CPU / agent-loop wall.

Usage: `uv run python -m bench.bench_real_server [--rollouts 3]`. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from bench.common import machine, median, print_table


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rollouts", type=int, default=3)
    args = p.parse_args()

    from mimo_core.config import read_config
    from mimo_core.datasets.loader import load_tasks
    from mimo_core.records.model_calls import iter_steps
    from mimo_core.records.trajectory import read_trajectory
    from mimo_core.run.batch import run_jobs
    from mimo_core.run.plan import RunRequest, plan_run
    from testkit import llama_server
    from testkit.llama_server import TEMPLATE, llama_config
    from testkit.tasks import write_tasks

    why = llama_server.available()
    if why:
        raise SystemExit(why)
    rows, shares = [], []
    with (
        tempfile.TemporaryDirectory(prefix="mimo-bench-real-") as tmp,
        llama_server.running(Path(tmp) / "server", TEMPLATE) as server,
    ):
        for i in range(args.rollouts + 1):  # the first warms the server's prompt cache and our imports
            work = Path(tmp) / f"r{i}"
            work.mkdir()
            data = write_tasks(work)
            cfg = llama_config(work, "bench", server)
            request = RunRequest(dataset=str(data), configs=[str(cfg)], output_dir=work / "out", run_id=f"b{i}")
            jobs = plan_run(request, load_tasks(str(data)), [read_config(cfg)]).jobs
            cpu0, t0 = _cpu(), time.monotonic()
            [record] = run_jobs(jobs)
            cpu, wall = _cpu() - cpu0, time.monotonic() - t0
            if i == 0:
                continue
            folder = work / "out" / record.output_dir
            traj = read_trajectory(folder / "traj.json")
            server_ms = sum(
                (c.response.get("timings") or {}).get("prompt_ms", 0.0)
                + (c.response.get("timings") or {}).get("predicted_ms", 0.0)
                for c in iter_steps(folder / "agent_msgs")
            )
            model_s = sum(c.latency_s for c in traj.calls)
            loop_s = traj.timings.agent_s
            share = cpu / loop_s if loop_s else 0.0
            shares.append(share)
            rows.append(
                [
                    str(i),
                    record.exit_status.value,
                    str(record.steps),
                    f"{server_ms / 1000:.2f}",
                    f"{model_s:.2f}",
                    f"{loop_s:.2f}",
                    f"{wall:.2f}",
                    f"{cpu * 1000:.0f}",
                    f"{share:.1%}",
                ]
            )
    print(f"real server (llama.cpp, SmolLM2-135M, 1 thread) · {machine()}")
    print_table(
        "per rollout: the server's time beside the framework's (3 steps, 48-token replies)",
        [
            "rollout",
            "status",
            "steps",
            "server s",
            "model calls s",
            "agent loop s",
            "rollout wall s",
            "framework CPU ms",
            "framework share",
        ],
        rows,
    )
    print(f"median framework share of the agent loop: {median(shares):.1%}")


if __name__ == "__main__":
    main()
