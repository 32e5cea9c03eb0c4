"""The runner beside hostile rollouts (issue 34): 8 hostile rows and 8 honest ones in one real CLI run on
local+bwrap with the scripted model, every row with memory_mb 512 and storage_mb 200. The hostile rows
cycle through: a 60 MB file and a 50 MB line read by the read tool, 400 MB floods on stdout and on
stderr, a verifier writing 150 MB of padding before a valid reward and one writing a sparse 4 GB
reward.json, 200k small files (past storage_mb) and a fork-and-allocate loop (past memory_mb). Prints:

- the runner's peak RSS: its own VmHWM (/proc/<pid>/status, sampled every 20 ms; wait4's ru_maxrss keeps
  the parent's size through fork and exec: tests/redteam/runner_rss.py), the runner's own CPU, the whole
  tree's CPU (wait4) and summed RSS (sampled every 100 ms);
- the host disk the run used: the largest drop of the host filesystem's free space (sampled every
  0.2 s) and of the run folder's du (every 1 s);
- each row's outcome (honest rows must score 1);
- the budget watchdog's cost: one check (`budget_exceeded()`: the sandbox cgroup's OOM count and two
  `du` of its folders) of a local+bwrap sandbox holding a repository of 5,000 and of 50,000 files, CPU
  per check and per minute at its pace (every 2 s, or 5× a check's time); and the same 8 honest rows,
  each sleeping 20 s, with the budgets on (memory_mb 512, storage_mb 200) and off (both null: no du, no
  memory cap);
- beside mini-swe-agent: one rollout that makes a 60 MB file, `cat`s it and floods 400 MB of output, each
  runner's peak RSS (VmHWM) and the ratio.

Run as root (bwrap, cgroups) from the repository root:

    uv run python -m bench.bench_budgets [--hostile 8] [--honest 8] [--workers 8] [--no-peer] [--no-ab]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import API_KEY, MODEL, PEER_SUBMIT, frameworks, machine, peer_env, peer_python, print_table
from testkit.budget_cases import EVAL, Call, MiB, bash, budget_config, budget_row, junk, play, read, write_rows
from testkit.scripted_llm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[1]
MEMORY_MB, STORAGE_MB = 512, 200


# case -> (tool calls before solving, extra row fields)
HOSTILE: dict[str, tuple[list[Call], dict[str, Any]]] = {
    "huge_file": (
        [bash(junk("big.txt", 'yes abcdefghi | head -c 60M > "$f"')), read("junk/big.txt")],
        {},
    ),
    "one_line": (
        [bash(junk("line.txt", "head -c 50M /dev/zero | tr '\\0' x > \"$f\"")), read("junk/line.txt")],
        {},
    ),
    "stdout_flood": ([bash("yes out-flood | head -c 400M; echo done")], {}),
    "stderr_flood": ([bash("yes err-flood | head -c 400M >&2; echo done")], {}),
    "reward_padded": (
        [bash("echo hello")],
        {
            "eval_script": "mkdir -p /logs/verifier; head -c 150M /dev/zero | tr '\\0' ' ' "
            "> /logs/verifier/reward.json; echo '{\"reward\": 1}' >> /logs/verifier/reward.json; " + EVAL
        },
    ),
    "reward_sparse": (
        [bash("echo hello")],
        {"eval_script": "mkdir -p /logs/verifier; truncate -s 4G /logs/verifier/reward.json; " + EVAL},
    ),
    "many_small": (
        [
            bash(
                'mkdir -p "$HOME/many" && cd "$HOME/many" && s=$(printf "%2048s" x) && '
                'for i in $(seq 200000); do printf %s "$s" > $i; done; echo made'
            )
        ],
        {},
    ),
    "fork_allocate": (
        [bash("for i in $(seq 12); do (head -c 100M /dev/zero | tail -c 100M > /dev/null) & done; wait; echo ok")],
        {},
    ),
}


# -- measuring a runner from outside ------------------------------------------------------------------


def _proc_numbers(pid: int) -> tuple[int, float]:
    """(VmHWM bytes, own CPU seconds) of a live process; (0, 0) once it is gone or a zombie."""
    hwm, cpu = 0, 0.0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        pass
    return hwm, cpu


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
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    total, todo, seen = 0, [root], set()
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


def measure(argv: list[str], env: dict[str, str], folder: Path, cwd: Path = REPO) -> dict[str, Any]:
    """Run `argv`, sampling its VmHWM and CPU (20 ms), its tree's summed RSS (100 ms), the host's free space
    (200 ms) and `folder`'s du (1 s); wait4 gives the whole tree's CPU."""
    with open(folder / "stderr.log", "ab") as se:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=se)
    free0 = shutil.disk_usage(folder).free
    peak = {"hwm": 0, "cpu": 0.0, "tree": 0, "free": free0, "du": 0}
    done = threading.Event()

    def sample() -> None:
        n = 0
        while not done.is_set():
            hwm, cpu = _proc_numbers(proc.pid)
            peak["hwm"], peak["cpu"] = max(peak["hwm"], hwm), max(peak["cpu"], cpu)
            if n % 5 == 0:
                peak["tree"] = max(peak["tree"], _tree_rss(proc.pid))
            if n % 10 == 0:
                peak["free"] = min(peak["free"], shutil.disk_usage(folder).free)
            if n % 50 == 0:
                peak["du"] = max(peak["du"], _du(folder))
            n += 1
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    started = time.monotonic()
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - started
    done.set()
    sampler.join()
    return {
        "exit": os.waitstatus_to_exitcode(status),
        "seconds": seconds,
        "hwm": peak["hwm"],
        "own_cpu": peak["cpu"],
        "tree_cpu": usage.ru_utime + usage.ru_stime,
        "tree_rss": peak["tree"],
        "disk_drop": free0 - peak["free"],
        "du": peak["du"],
    }


# -- our runs ---------------------------------------------------------------------------------------


def _row(name: str, answer: str, budgets: bool, **extra: Any) -> dict[str, Any]:
    row = budget_row(name, answer, **extra)
    if budgets:
        row |= {"memory_mb": MEMORY_MB, "storage_mb": STORAGE_MB}
    return row


def run_ours(
    folder: Path,
    rows: list[dict[str, Any]],
    calls_of: Callable[[str], list[Call]],
    answer: str,
    workers: int,
    **env_block: Any,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """One CLI run of `rows` on local+bwrap: (its measures, its records by instance)."""
    data, out = write_rows(folder, rows), folder / "out"
    cfg = budget_config(folder, **env_block)
    with ScriptedLLM() as llm:
        llm.set_responder(play(calls_of, answer))
        env = {**os.environ, "MIMO_TEST_BASE_URL": llm.openai_base_url, "MIMOAGENT_OBSERVERS": "0"}
        argv = [sys.executable, "-m", "mimo_core.cli", "-c", str(cfg), "--dataset", str(data), "-o", str(out)]
        figures = measure([*argv, "--workers", str(workers)], env, folder)
    results = out / "results.jsonl"
    records = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    return figures, {r["instance_id"]: r for r in records}


def _outcome(rec: dict[str, Any] | None) -> str:
    if rec is None:
        return "not recorded"
    grading = rec.get("grading") or {}
    why = grading.get("budget_exceeded") or ("void" if grading.get("void_reason") else "")
    return f"{rec['exit_status']} reward={rec['reward']}" + (f" ({why})" if why else "")


def mix(args: argparse.Namespace, root: Path) -> None:
    cases = list(HOSTILE)
    names = {f"hostile_{i}_{cases[i % len(cases)]}": cases[i % len(cases)] for i in range(args.hostile)}
    honest = [f"honest_{i}" for i in range(args.honest)]
    answer = secrets.token_hex(6)
    rows = [_row(n, answer, True, **HOSTILE[c][1]) for n, c in names.items()]
    rows += [_row(n, answer, True) for n in honest]
    figures, by = run_ours(
        root / "mix", rows, lambda n: HOSTILE[names[n]][0] if n in names else [], answer, args.workers
    )
    ok = sum(1 for n in honest if (by.get(n) or {}).get("reward") == 1.0)
    print(
        f"\n{args.hostile} hostile + {args.honest} honest rows, {args.workers} workers, local+bwrap, memory_mb "
        f"{MEMORY_MB}, storage_mb {STORAGE_MB}: exit {figures['exit']}, {figures['seconds']:.0f} s"
    )
    print_table(
        "the runner and the host",
        ["figure", "value"],
        [
            ["runner peak RSS (its VmHWM, sampled 20 ms)", f"{figures['hwm'] / MiB:.0f} MB (target < 300 MB)"],
            ["runner's own CPU", f"{figures['own_cpu']:.1f} s"],
            ["whole tree CPU (wait4)", f"{figures['tree_cpu']:.1f} s"],
            ["whole tree peak RSS (summed, sampled 100 ms)", f"{figures['tree_rss'] / MiB:.0f} MB"],
            ["host disk used at most (free space's drop, 200 ms)", f"{figures['disk_drop'] / MiB:.0f} MB"],
            ["run folder's du at most (1 s)", f"{figures['du'] / MiB:.0f} MB"],
            ["honest rows with reward 1", f"{ok}/{args.honest}"],
        ],
    )
    print_table("each hostile row", ["row", "outcome"], [[n, _outcome(by.get(n))] for n in names])
    wrong = [n for n in honest if (by.get(n) or {}).get("reward") != 1.0]
    if wrong:
        print(f"honest rows NOT scoring 1: {[(n, _outcome(by.get(n))) for n in wrong]}")


# -- the watchdog's cost ----------------------------------------------------------------------------


def watchdog_check(root: Path, files: int = 5000, checks: int = 30) -> None:
    """CPU of one budget check of a live local+bwrap sandbox whose work folder holds `files` files."""
    from mimo_core.config import EnvironmentConfig
    from mimo_core.environments.base import SandboxSpec
    from mimo_core.environments.local.environment import LocalEnvironment

    seed = root / "seed"
    for i in range(files):
        d = seed / f"pkg{i // 100}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"m{i}.py").write_text(f"x = {i}\n" * 20)
    spec = SandboxSpec(cwd="/testbed", seed_dir=str(seed), memory_mb=2048, storage_mb=10240, network=False)  # defaults
    env = LocalEnvironment(spec, EnvironmentConfig(sandbox="bwrap", backend_kwargs={"root": str(root / "envs")}))
    env.start()
    try:
        env.budget_exceeded()  # warm (page cache of the folder's inodes)
        kids0, own0, wall0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.thread_time(), time.perf_counter()
        for _ in range(checks):
            assert env.budget_exceeded() is None
        kids1, own1, wall1 = resource.getrusage(resource.RUSAGE_CHILDREN), time.thread_time(), time.perf_counter()
    finally:
        env.stop()
    du_cpu = (kids1.ru_utime + kids1.ru_stime - kids0.ru_utime - kids0.ru_stime) / checks
    own = (own1 - own0) / checks
    per_check = du_cpu + own
    pace = max(2.0, 5 * (wall1 - wall0) / checks)  # BudgetWatch: `every` 2 s, or 5× a check's time
    print_table(
        f"one budget check of a local+bwrap sandbox holding {files} files ({checks} checks)",
        ["figure", "value"],
        [
            ["wall per check", f"{(wall1 - wall0) / checks * 1000:.1f} ms"],
            ["CPU per check: du (children)", f"{du_cpu * 1000:.1f} ms"],
            ["CPU per check: the runner's thread", f"{own * 1000:.2f} ms"],
            [
                f"CPU per minute at its pace (one check per {pace:.1f} s)",
                f"{per_check * 60 / pace * 1000:.0f} ms ({per_check / pace * 100:.2f} % of a core)",
            ],
        ],
    )


def budgets_ab(args: argparse.Namespace, root: Path) -> None:
    """The same honest rows, each sleeping 20 s, with the budgets on (defaults) and off."""
    answer = secrets.token_hex(6)
    names = [f"honest_{i}" for i in range(args.honest)]
    results = []
    for label, on in (("budgets on (memory_mb 512, storage_mb 200)", True), ("budgets off (null)", False)):
        rows = [_row(n, answer, on) for n in names]
        block = {} if on else {"memory_mb": None, "storage_mb": None}
        figures, by = run_ours(
            root / f"ab-{on}", rows, lambda n: [bash("sleep 20; echo slept")], answer, args.workers, **block
        )
        ok = sum(1 for n in names if (by.get(n) or {}).get("reward") == 1.0)
        results.append((label, figures, ok))
    base = results[1][1]
    print_table(
        f"{args.honest} honest rows sleeping 20 s each, {args.workers} workers: the budgets' cost",
        ["run", "runner's own CPU", "whole tree CPU", "× budgets off", "runner peak RSS", "rewards 1"],
        [
            [
                label,
                f"{f['own_cpu']:.2f} s",
                f"{f['tree_cpu']:.2f} s",
                f"{f['tree_cpu'] / base['tree_cpu']:.2f}",
                f"{f['hwm'] / MiB:.0f} MB",
                f"{ok}/{args.honest}",
            ]
            for label, f, ok in results
        ],
    )


# -- beside mini-swe-agent ----------------------------------------------------------------------------

PEER_CALLS = [
    "yes abcdefghi | head -c 60M > big.txt && ls -l big.txt",
    "cat big.txt",
    "yes out-flood | head -c 400M; echo done",
]


def beside_peer(args: argparse.Namespace, root: Path) -> None:
    rows: list[list[str]] = []
    answer = secrets.token_hex(6)
    ours, _ = run_ours(
        root / "ours-one", [_row("one", answer, True)], lambda n: [bash(c) for c in PEER_CALLS], answer, 1
    )
    rows.append(["mimoagent (local+bwrap)", f"{ours['hwm'] / MiB:.0f} MB", f"{ours['seconds']:.1f} s"])
    py = peer_python() if "peer" in frameworks(args.no_peer) else None
    if py is not None:
        folder = root / "peer"
        (folder / "cfg").mkdir(parents=True)
        steps = [Reply(tool_calls=[("bash", {"command": c})]) for c in [*PEER_CALLS, PEER_SUBMIT]]
        with ScriptedLLM() as llm:
            llm.set_responder(lambda req: steps[min(req.n_assistant_turns, len(steps) - 1)])
            argv = [str(py), str(REPO / "bench" / "peer_mini.py"), "--base-url", llm.url, "--model", f"openai/{MODEL}"]
            argv += ["--api-key", API_KEY, "--steps", str(len(steps)), "--workdir", str(folder), "--warmup", "0"]
            peer = measure(argv, peer_env(folder / "cfg"), folder, cwd=folder)
        rows.append(["mini-swe-agent", f"{peer['hwm'] / MiB:.0f} MB", f"{peer['seconds']:.1f} s"])
        rows.append(["ratio (ours / peer)", f"{ours['hwm'] / max(peer['hwm'], 1):.2f}×", ""])
    print_table(
        "one rollout: a 60 MB file made and cat, then 400 MB of output: the runner's peak RSS (VmHWM)",
        ["runner", "peak RSS", "wall"],
        rows,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hostile", type=int, default=8)
    ap.add_argument("--honest", type=int, default=8)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--no-peer", action="store_true", help="leave mini-swe-agent out")
    ap.add_argument("--no-ab", action="store_true", help="skip the budgets on/off run (its two runs take ~1 min)")
    args = ap.parse_args()
    print(machine())
    root = Path(tempfile.mkdtemp(prefix=".mimo-bench-budgets-", dir=Path.home()))
    try:
        mix(args, root)
        for files in (5000, 50000):  # a small repository, a large one (django's checkout: ~7,000 files)
            watchdog_check(root / f"check-{files}", files, checks=30 if files < 10000 else 10)
        if not args.no_ab:
            budgets_ab(args, root)
        beside_peer(args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
