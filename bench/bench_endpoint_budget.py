"""Throughput against a rate-limited endpoint, as a fraction of what it allows (models/endpoint_budget.py).

The scripted server (testkit/scripted_limits.py) allows `--cap` requests in flight, each taking `--latency`
seconds, so it allows cap / latency requests per second. `--threads` callers share one model client
(the default agent's path: the real openai SDK) and make `--calls` calls; the budget is either told the
cap (`max_concurrency`) or left adaptive. Per mode: calls per second, that as a share of the allowed
rate, the server's refusals (429) and the most requests it saw in flight, the budget's final limit.

Usage: `uv run python -m bench.bench_endpoint_budget [--threads 256 --cap 16 --latency 0.2 --calls 1500]`.
Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

from bench.common import machine, print_table
from mimo_core.config import ModelConfig, RetryConfig
from mimo_core.models.endpoint_budget import budget_for
from mimo_core.models.factory import make_model
from mimo_core.models.messages import Message
from testkit.scripted_llm import Reply, ScriptedLLM, turns


def _one(args: argparse.Namespace, mode: str) -> list[str]:
    with ScriptedLLM(turns(Reply(content="ok")), latency=args.latency) as server:
        limits = server.rate_limit(max_concurrency=args.cap, retry_after=args.latency)
        cfg = ModelConfig(
            model_name=f"bench-{mode}",
            model_kwargs={"base_url": server.openai_base_url, "api_key": "k"},
            retry=RetryConfig(max_attempts=20, initial_delay=0.05, max_delay=2.0, timeout=30.0),
            max_concurrency=args.cap if mode == "max_concurrency" else None,
        )
        model, budget = make_model(cfg), budget_for(cfg)
        messages = [Message(role="user", content="hi")]
        t0 = time.monotonic()
        with ThreadPoolExecutor(args.threads) as pool:
            list(pool.map(lambda _: model.query(messages, []), range(args.calls)))
        elapsed = time.monotonic() - t0
    rate, allowed = args.calls / elapsed, args.cap / args.latency
    return [
        mode,
        f"{rate:.1f}",
        f"{rate / allowed:.0%}",
        str(limits.refused),
        str(limits.max_seen),
        f"{budget.limit:.1f}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=256)
    parser.add_argument("--cap", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--calls", type=int, default=1500)
    args = parser.parse_args()
    rows = [_one(args, mode) for mode in ("max_concurrency", "adaptive")]
    print(machine())
    print_table(
        f"{args.threads} threads, {args.calls} calls, endpoint allows {args.cap} in flight x {args.latency:g} s "
        f"= {args.cap / args.latency:g} calls/s",
        ["mode", "calls/s", "of allowed", "429s", "max in flight", "final limit"],
        rows,
    )


if __name__ == "__main__":
    main()
