"""Hostile-user figures: bad inputs tried, and of them how many were refused cleanly, ended in a traceback,
were wrongly accepted or hung; rollouts lost, duplicated, torn, and sandbox folders and processes left
over after N random kills of the runner (SIGKILL, SIGTERM, two SIGTERMs, SIGHUP; each followed by a rerun).

The inputs are the first round's and testkit/bad_inputs.py's (the corpus test_bad_inputs_strict asserts),
each run bounded to 3 GiB of address space and 30 s. Clean means: exit 2, one line on stderr, no
traceback, no result written. The kill loop runs the real CLI on the scripted server; each rollout
starts `sleep 300 &` and `setsid sleep 300 &` in its sandbox before solving the task, so a leftover
process is counted if one survives its rollout or its killed runner. Run from the repository root:

    uv run python -m bench.bench_hostile [--kills 5] [--tasks 30] [--workers 4]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from testkit.bad_inputs import CASES, bounded
from testkit.scripted_llm import ScriptedLLM, call, turns
from testkit.tasks import write_config, write_tasks

REPO = Path(__file__).resolve().parents[1]
KEY = "sk-bench-hostile"
# How a runner is stopped: killed outright, or by the signals a scheduler or a closed terminal sends.
KILLS = {
    "SIGKILL": [signal.SIGKILL],
    "SIGTERM": [signal.SIGTERM],
    "SIGTERM x2": [signal.SIGTERM, signal.SIGTERM],
    "SIGHUP": [signal.SIGHUP],
}
SOLVE = turns(
    call("bash", command="sleep 300 & setsid sleep 300 & echo started"),
    call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"),
    call("submit"),
)


def _cli(args: list[str], server: ScriptedLLM, wait: bool = True, tmpdir: Path | None = None) -> Any:
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": server.openai_base_url,
        "MIMO_TEST_API_KEY": KEY,
        "MIMOAGENT_OBSERVERS": "0",
    }
    if tmpdir is not None:  # the runner's host-side scratch goes here, where leftovers can be counted
        env["TMPDIR"] = str(tmpdir)
    cmd = [sys.executable, "-m", "mimo_core.cli", *args]
    if wait:
        return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _classify(proc: Any, written: bool) -> str:
    """clean: exit 2, one line, no traceback, nothing written; else traceback / wrongly accepted."""
    if "Traceback" in proc.stderr:
        return "traceback"
    lines = proc.stderr.strip().splitlines()
    if proc.returncode == 2 and len(lines) == 1 and not written:
        return "clean"
    return "wrongly accepted"


def _try(args: list[str], server: ScriptedLLM, cwd: Path, out: Path) -> tuple[str, str]:
    """One bad input, bounded to 3 GiB and 30 s: its class and its last stderr line."""
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": server.openai_base_url,
        "MIMO_TEST_API_KEY": KEY,
        "MIMOAGENT_OBSERVERS": "0",
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "mimo_core.cli", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            preexec_fn=bounded,
        )
    except subprocess.TimeoutExpired:
        return "hang", "no answer within 30 s"
    if proc.returncode < 0 or "MemoryError" in proc.stderr:
        return "hang", f"killed by signal {-proc.returncode}" if proc.returncode < 0 else "out of memory"
    lines = proc.stderr.strip().splitlines()
    written = (out / "results.jsonl").exists() or (cwd / "results.jsonl").exists()
    return _classify(proc, written), (lines[-1][:110] if lines else f"exit {proc.returncode}")


def _legacy_cases(root: Path, data: Path, cfg: Path, out: str) -> dict[str, list[str]]:
    """The first round's inputs (issue 10), still tried: each must stay refused."""
    blocker = root / "plain.txt"
    blocker.write_text("x\n")
    utf8 = root / "utf8.jsonl"
    utf8.write_bytes(data.read_bytes() + b'{"instance_id": "caf\xe9"}\n')
    b64 = root / "b64.jsonl"
    b64.write_text(
        json.dumps(
            {
                "instance_id": "a",
                "dataset_type": "generic",
                "repo_archive": "%%%",
                "problem_statement": "x",
                "eval_script": "true",
            }
        )
        + "\n"
    )
    empty_rows = root / "empty.jsonl"
    empty_rows.write_text("")
    empty_cfg = root / "empty.yaml"
    empty_cfg.write_text("")

    def variant(name: str, edit: Any) -> Path:
        doc = yaml.safe_load(cfg.read_text())
        edit(doc)
        path = root / f"{name}.yaml"
        path.write_text(yaml.safe_dump(doc))
        return path

    negative = variant("negative", lambda d: d["environment"].update(timeout=-5))
    tool = variant("tool", lambda d: d["agent"].update(tools=[{"tool": "no_such_tool"}]))
    template = variant("template", lambda d: d["agent"].update(instance_template="{{ task "))
    return {
        "--slice ::0": ["-c", str(cfg), "--dataset", str(data), "-o", out, "--slice", "::0"],
        "JSONL with invalid UTF-8": ["-c", str(cfg), "--dataset", str(utf8), "-o", out],
        "-o is a file": ["-c", str(cfg), "--dataset", str(data), "-o", str(blocker)],
        "-o under a file": ["-c", str(cfg), "--dataset", str(data), "-o", str(blocker / "sub")],
        "-o unwritable": ["-c", str(cfg), "--dataset", str(data), "-o", "/proc/mimo-out"],
        "empty config file": ["-c", str(empty_cfg), "--dataset", str(data), "-o", out],
        "timeout: -5": ["-c", str(negative), "--dataset", str(data), "-o", out],
        "unknown tool name": ["-c", str(tool), "--dataset", str(data), "-o", out],
        "template syntax error": ["-c", str(template), "--dataset", str(data), "-o", out],
        "repo_archive not base64": ["-c", str(cfg), "--dataset", str(b64), "-o", out],
        "0 rows": ["-c", str(cfg), "--dataset", str(empty_rows), "-o", out],
        "missing dataset": ["-c", str(cfg), "--dataset", str(root / "none.jsonl"), "-o", out],
        "--workers 0": ["-c", str(cfg), "--dataset", str(data), "-o", out, "--workers", "0"],
        "--override-config not JSON": ["-c", str(cfg), "--dataset", str(data), "-o", out, "--override-config", "{"],
    }


def _bad_inputs(root: Path, server: ScriptedLLM) -> list[tuple[str, str, str]]:
    """(name, class, last stderr line) of every input of the first round and of testkit/bad_inputs.py,
    each in a folder of its own; then a second run on a busy -o, with and without its lock file."""
    results = []
    legacy_root = root / "legacy"
    legacy_root.mkdir()
    data, cfg = write_tasks(legacy_root, n=2), write_config(legacy_root, "cfg")
    for name, args in _legacy_cases(legacy_root, data, cfg, str(legacy_root / "out")).items():
        results.append((name, *_try(args, server, legacy_root, legacy_root / "out")))
    for i, (name, (build, _)) in enumerate(CASES.items()):
        work = root / f"case-{i}"
        work.mkdir()
        data, cfg = write_tasks(work), write_config(work, "cfg")
        results.append((name, *_try(build(work, data, cfg, str(work / "out")), server, work, work / "out")))
    data, cfg = write_tasks(root, n=2), write_config(root, "cfg")
    for name, unlock in (("second run on the same -o", False), ("second run after rm .mimoagent.lock", True)):
        busy = root / ("busy-unlocked" if unlock else "busy")
        server.latency = 0.5  # the first run is still going when the second one comes
        first = _cli(["-c", str(cfg), "--dataset", str(data), "-o", str(busy)], server, wait=False)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (busy / "results.jsonl").exists():
            time.sleep(0.05)
        if unlock:
            (busy / ".mimoagent.lock").unlink(missing_ok=True)
        second = _cli(["-c", str(cfg), "--dataset", str(data), "-o", str(busy), "--redo-existing"], server)
        first.wait()
        server.latency = 0.0
        lines = second.stderr.strip().splitlines()
        verdict = "clean" if second.returncode == 2 and len(lines) == 1 else _classify(second, True)
        results.append((name, verdict, lines[-1][:110] if lines else ""))
    return results


def _sandbox_processes(root: Path) -> list[int]:
    """Processes whose working directory is under `root` (the sandboxes of this bench)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd").startswith(str(root)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _kills(root: Path, server: ScriptedLLM, kills: int, tasks: int, workers: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    data, cfg, out = write_tasks(root, n=tasks), write_config(root, "cfg"), root / "out"
    sandboxes = root / "sandboxes"
    sandboxes.mkdir()
    doc = yaml.safe_load(cfg.read_text())
    doc["environment"]["backend_kwargs"] = {"root": str(sandboxes)}
    cfg.write_text(yaml.safe_dump(doc))
    args = ["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--workers", str(workers)]
    scratch = root / "tmp"
    scratch.mkdir()
    server.set_responder(SOLVE)
    server.latency = 0.05
    killed_scratch = 0
    how: dict[str, int] = {}
    slow_stops = 0
    for _ in range(kills):
        proc = _cli(args, server, wait=False, tmpdir=scratch)
        time.sleep(rng.uniform(0.5, 3.0))
        kind = rng.choice(list(KILLS))
        how[kind] = how.get(kind, 0) + 1
        for signum in KILLS[kind]:
            proc.send_signal(signum)
            time.sleep(0.05)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a stop that hangs is counted, then ended
            slow_stops += 1
            proc.kill()
            proc.wait()
        if kind == "SIGKILL":
            killed_scratch += len(list(scratch.glob("mimo-scratch-*")))
    server.latency = 0.0
    final = _cli(args, server, tmpdir=scratch)
    time.sleep(0.5)
    results = out / "results.jsonl"
    keys, torn = [], 0
    for line in results.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            torn += 1
            continue
        keys.append((rec["instance_id"], rec["config_name"], rec["rollout_index"]))
    read_back, unreadable = _agent_msgs(out)
    leftover_procs = _sandbox_processes(sandboxes)
    for pid in leftover_procs:  # ours to clean up: they live in this bench's sandboxes
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return {
        "kills by kind": ", ".join(f"{k} x{n}" for k, n in sorted(how.items())),
        "stops that took over 30 s": slow_stops,
        "final run exit status": final.returncode,
        "rollouts expected": tasks,
        "lost": tasks - len(set(keys)),
        "duplicated": len(keys) - len(set(keys)),
        "torn lines in results.jsonl": torn,
        "torn lines repaired (files moved aside)": len(list(out.glob("results.jsonl.torn-*"))),
        "leftover sandbox folders": len(list(sandboxes.iterdir())),
        "leftover names": ", ".join(p.name for p in sandboxes.iterdir()) or "-",
        "leftover processes": len(leftover_procs),
        "rollout folders whose agent_msgs read back": read_back,
        "rollout folders whose agent_msgs do not": ", ".join(unreadable) or "0",
        "scratch folders of killed runners seen": killed_scratch,
        "scratch folders left after the final run": len(list(scratch.glob("mimo-scratch-*"))),
    }


def _agent_msgs(out: Path) -> tuple[int, list[str]]:
    """Every rollout folder's calls, kept attempts included, read back (a killed writer's torn last line
    is skipped by design); the folders whose calls do not read back, with why."""
    from mimo_core.records.model_calls import AgentMsgsError, iter_steps

    ok, bad = 0, []
    for msgs in sorted(out.rglob("agent_msgs")):
        try:
            list(iter_steps(msgs))
            ok += 1
        except AgentMsgsError as e:
            bad.append(f"{msgs.relative_to(out)}: {e}")
    return ok, bad


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kills", type=int, default=5)
    p.add_argument("--tasks", type=int, default=30)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="mimo-hostile-") as tmp, ScriptedLLM(SOLVE) as server:
        root = Path(tmp)
        (root / "bad").mkdir()
        bad = _bad_inputs(root / "bad", server)
        kinds = ("clean", "traceback", "wrongly accepted", "hang")
        counts = {k: sum(1 for _, c, _ in bad if c == k) for k in kinds}
        print(
            f"bad inputs tried: {len(bad)}; "
            + ", ".join(f"{k}: {counts[k]}" for k in kinds)
            + "  (clean = one line on stderr, exit 2, nothing written; hang = no answer in 30 s or 3 GiB)"
        )
        for name, kind, line in bad:
            print(f"  {kind if kind != 'clean' else 'ok':16s} {name:34s} {line}")
        (root / "kills").mkdir()
        t0 = time.monotonic()
        figures = _kills(root / "kills", server, args.kills, args.tasks, args.workers, args.seed)
        print(
            f"\n{args.kills} random kills of the runner (SIGKILL, SIGTERM, two SIGTERMs, SIGHUP), each followed "
            f"by a rerun ({args.tasks} rollouts, {args.workers} workers, {time.monotonic() - t0:.0f} s):"
        )
        for name, value in figures.items():
            print(f"  {name:40s} {value}")


if __name__ == "__main__":
    main()
