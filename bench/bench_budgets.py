"""The runner's memory beside hostile rollouts: 8 hostile rows (the budget cases of
tests/redteam/test_budgets.py, cycled: huge files read, one enormous line, a sparse 10 GB file, devices,
output floods, a verifier writing a 300 MB log) and 8 honest ones, in one real CLI run on local+bwrap
with the scripted model. Prints the runner's peak RSS (its own, from wait4), the peak of the whole
process tree's summed RSS (sampled from /proc every 50 ms: the runner, its sandboxes and every process in
them), the most host disk the run's folder used, and how many honest rows scored 1. Run as root from the
repository root:

    uv run python -m bench.bench_budgets [--hostile 8] [--honest 8] [--workers 8]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from testkit.scripted_llm import Reply, Request, ScriptedLLM
from tests.redteam.test_budgets import EVAL, HOSTILE, SOLVE, _config

REPO = Path(__file__).resolve().parents[1]
MiB = 1 << 20


def _tree_rss(root: int) -> int:
    """Summed RSS (bytes) of `root` and every descendant now alive."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        rss[int(entry)] = int(fields[21]) * page
    total, todo, seen = 0, [root], set()
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


def _du(folder: Path) -> int:
    res = subprocess.run(["du", "-s", "--block-size=1", str(folder)], capture_output=True, text=True)
    try:
        return int(res.stdout.split()[0])
    except (IndexError, ValueError):
        return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hostile", type=int, default=8)
    ap.add_argument("--honest", type=int, default=8)
    ap.add_argument("--workers", type=int, default=8)
    args = ap.parse_args()
    cases = list(HOSTILE)
    names = {f"hostile_{i}": cases[i % len(cases)] for i in range(args.hostile)}
    honest = [f"honest_{i}" for i in range(args.honest)]
    folder = Path(tempfile.mkdtemp(prefix=".mimo-bench-budgets-", dir=Path.home()))
    try:
        (folder / "repo").mkdir()
        (folder / "repo" / "README.md").write_text("A task.\n")
        answer = secrets.token_hex(6)
        rows = []
        for name in [*names, *honest]:
            extra = HOSTILE[names[name]][2] if name in names else {}
            rows.append(
                {
                    "instance_id": name,
                    "dataset_type": "generic",
                    "repo_dir": "repo",
                    "network": False,
                    "problem_statement": f"Budget case {name}. Write {answer} to solved.txt.",
                    "eval_script": EVAL,
                    "test_files": {"answer.txt": answer},
                    **extra,
                }
            )
        data, out = folder / "tasks.jsonl", folder / "out"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        cfg = _config(folder)

        def respond(req: Request) -> Reply:
            user = next((str(m.get("content")) for m in req.body.get("messages") or [] if m.get("role") == "user"), "")
            name = user.split("Budget case ", 1)[-1].split(".", 1)[0]
            calls = [*(HOSTILE[names[name]][0] if name in names else []), SOLVE]
            if req.n_assistant_turns < len(calls):
                tool, targs = calls[req.n_assistant_turns]
                return Reply(
                    tool_calls=[
                        (
                            tool,
                            {k: v.replace("{answer}", answer) if isinstance(v, str) else v for k, v in targs.items()},
                        )
                    ]
                )
            return Reply(tool_calls=[("submit", {"message": "done"})])

        with ScriptedLLM() as llm:
            llm.set_responder(respond)
            env = {**os.environ, "MIMO_TEST_BASE_URL": llm.openai_base_url, "MIMOAGENT_OBSERVERS": "0"}
            started = time.monotonic()
            with open(folder / "stderr", "wb") as se:
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "mimo_core.cli",
                        "-c",
                        str(cfg),
                        "--dataset",
                        str(data),
                        "-o",
                        str(out),
                        "--workers",
                        str(args.workers),
                    ],
                    cwd=REPO,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=se,
                )
            peak = {"tree": 0, "disk": 0}
            done = threading.Event()

            def sample() -> None:
                n = 0
                while not done.is_set():
                    peak["tree"] = max(peak["tree"], _tree_rss(proc.pid))
                    if n % 20 == 0:
                        peak["disk"] = max(peak["disk"], _du(folder))
                    n += 1
                    done.wait(0.05)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            _, status, usage = os.wait4(proc.pid, 0)
            done.set()
            sampler.join()
            seconds = time.monotonic() - started
        records = (
            [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
            if (out / "results.jsonl").exists()
            else []
        )
        by = {r["instance_id"]: r for r in records}
        honest_ok = sum(1 for n in honest if by.get(n, {}).get("reward") == 1.0)
        hostile_recorded = sum(1 for n in names if n in by)
        print(
            f"rollouts: {args.hostile} hostile + {args.honest} honest, {args.workers} workers, "
            f"exit {os.waitstatus_to_exitcode(status)}, {seconds:.0f} s"
        )
        print(f"runner peak RSS (wait4, its own): {usage.ru_maxrss / 1024:.0f} MB")
        print(f"whole tree peak RSS (summed, sampled 50 ms): {peak['tree'] / MiB:.0f} MB")
        print(f"host disk used by the run's folder at most (sampled 1 s): {peak['disk'] / MiB:.0f} MB")
        print(
            f"honest rows with reward 1: {honest_ok}/{args.honest}; hostile rows recorded: "
            f"{hostile_recorded}/{args.hostile} "
            f"(statuses: {sorted({by[n]['exit_status'] for n in names if n in by})})"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
