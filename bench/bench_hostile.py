"""Hostile-user figures: bad inputs tried and handled; rollouts lost, duplicated, torn, and sandbox folders
and processes left over after N random SIGKILLs of the runner (each followed by a rerun).

A bad input is handled when the CLI exits 2 with one line on stderr, no traceback, and writes no result.
The kill loop runs the real CLI on the scripted server; each rollout starts `sleep 300 &` and
`setsid sleep 300 &` in its sandbox before solving the task, so a leftover process is counted if one
survives its rollout or its killed runner. Run from the repository root:

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

from mimo_core.testing.scripted_llm import ScriptedLLM, call, turns
from mimo_core.testing.tasks import write_config, write_tasks

REPO = Path(__file__).resolve().parents[1]
KEY = "sk-bench-hostile"
SOLVE = turns(call("bash", command="sleep 300 & setsid sleep 300 & echo started"),
              call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))


def _cli(args: list[str], server: ScriptedLLM, wait: bool = True, tmpdir: Path | None = None) -> Any:
    env = {**os.environ, "MIMO_TEST_BASE_URL": server.openai_base_url, "MIMO_TEST_API_KEY": KEY,
           "MIMOAGENT_OBSERVERS": "0"}
    if tmpdir is not None:  # the runner's host-side scratch goes here, where leftovers can be counted
        env["TMPDIR"] = str(tmpdir)
    cmd = [sys.executable, "-m", "mimo_core.cli", *args]
    if wait:
        return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _bad_inputs(root: Path, server: ScriptedLLM) -> list[tuple[str, bool, str]]:
    data, cfg = write_tasks(root, n=2), write_config(root, "cfg")
    blocker = root / "plain.txt"
    blocker.write_text("x\n")
    utf8 = root / "utf8.jsonl"
    utf8.write_bytes(data.read_bytes() + b'{"instance_id": "caf\xe9"}\n')
    b64 = root / "b64.jsonl"
    b64.write_text(json.dumps({"instance_id": "a", "dataset_type": "generic", "repo_archive": "%%%",
                               "problem_statement": "x", "eval_script": "true"}) + "\n")
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
    out = str(root / "out")
    cases: dict[str, list[str]] = {
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
    results = []
    for name, args in cases.items():
        proc = _cli(args, server)
        lines = proc.stderr.strip().splitlines()
        handled = (proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr
                   and not (root / "out" / "results.jsonl").exists())
        results.append((name, handled, lines[-1][:110] if lines else f"exit {proc.returncode}"))
    server.latency = 0.5  # a second run on the same -o while the first is still running
    first = _cli(["-c", str(cfg), "--dataset", str(data), "-o", str(root / "busy")], server, wait=False)
    time.sleep(2.0)
    second = _cli(["-c", str(cfg), "--dataset", str(data), "-o", str(root / "busy")], server)
    first.wait()
    server.latency = 0.0
    lines = second.stderr.strip().splitlines()
    results.append(("second run on the same -o", second.returncode == 2 and len(lines) == 1,
                    lines[-1][:110] if lines else ""))
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
    for _ in range(kills):
        proc = _cli(args, server, wait=False, tmpdir=scratch)
        time.sleep(rng.uniform(0.5, 3.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
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
    from mimo_core.agent_msgs import AgentMsgsError, iter_steps

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
        print(f"bad inputs: {sum(h for _, h, _ in bad)}/{len(bad)} handled (exit 2, one line, nothing written)")
        for name, handled, line in bad:
            print(f"  {'ok  ' if handled else 'FAIL'} {name:28s} {line}")
        (root / "kills").mkdir()
        t0 = time.monotonic()
        figures = _kills(root / "kills", server, args.kills, args.tasks, args.workers, args.seed)
        print(f"\n{args.kills} random SIGKILLs of the runner, each followed by a rerun "
              f"({args.tasks} rollouts, {args.workers} workers, {time.monotonic() - t0:.0f} s):")
        for name, value in figures.items():
            print(f"  {name:40s} {value}")


if __name__ == "__main__":
    main()
