"""What a CLI-agent rollout costs beyond the CLI itself (issue 27's target: ≤ 0.5 s per rollout).

    uv run python -m bench.bench_cli_rollout                      # codex and claude-code, none and bwrap
    uv run python -m bench.bench_cli_rollout --cli codex --rollouts 8 --sandbox bwrap

Each cell is one run of the real `mimoagent` command (one worker) over `--rollouts` instances of the
greeting task, against the scripted server speaking the CLI's protocol (a read, an edit, a final reply).
Per rollout, from its own records: *rollout* = traj.json's `timings.total_s` (sandbox set-up to graded),
*CLI* = the CLI process's wall as the runner logged it (`<cli> exited N after X s` in instance.log;
its model calls through the recording proxy are inside it), *framework* = rollout − CLI (install check,
placement, config files, the proxy's start, log collection and conversion, grading). Beside it, per
rollout, what the run spends outside the rollouts: (the command's wall − Σ rollout) ÷ rollouts
(start-up, planning, teardown, the exit). Installs come from the test cache (`MIMOAGENT_TEST_CLI_CACHE`,
else ~/.cache/mimoagent-tests): run the CLI tests once first, or this installs from the registry.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.common import machine

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("MIMOAGENT_TEST_CLI_CACHE") or Path.home() / ".cache" / "mimoagent-tests")
KEY = "sk-bench-not-a-secret"
_EXITED = re.compile(r" exited -?\d+ after ([0-9.]+)s")


def _script(cli: str) -> Any:
    """Read the file, edit it, say done: in the tool names of each CLI."""
    from testkit.scripted_llm import Reply, call, turns

    if cli == "codex":
        return turns(
            call("exec_command", cmd="cat greeting.txt"),
            call("exec_command", cmd="sed -i s/hello/goodbye/ greeting.txt"),
            Reply(content="Done."),
        )
    return turns(
        call("Read", file_path="greeting.txt"),
        call("Edit", file_path="greeting.txt", old_string="hello", new_string="goodbye"),
        Reply(content="Done."),
    )


def _config(folder: Path, cli: str, protocol: str, base_url: str, sandbox: str) -> Path:
    cfg = {
        "agent": {"type": cli, "step_limit": 10, "instance_template": "{{task}}"},
        "environment": {"environment_class": "local", "timeout": 60, "sandbox": sandbox},
        "model": {
            "model_name": "scripted-model",
            "protocol": protocol,
            "model_kwargs": {"base_url": base_url, "api_key": KEY},
            "retry": {"max_attempts": 1, "timeout": 60},
        },
    }
    path = folder / f"{cli}-{sandbox}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def cell(cli: str, sandbox: str, rollouts: int, root: Path) -> dict[str, float]:
    """One run of `rollouts` instances; medians per rollout, in seconds."""
    from testkit.scripted_llm import ScriptedLLM
    from testkit.tasks import write_tasks

    protocol = "responses" if cli == "codex" else "anthropic"
    folder = root / f"{cli}-{sandbox}"
    folder.mkdir(parents=True)
    data = write_tasks(folder, rollouts)
    out = folder / "out"
    with ScriptedLLM(_script(cli)) as server:
        url = server.openai_base_url if protocol == "responses" else server.url
        cfg = _config(folder, cli, protocol, url, sandbox)
        env = {**os.environ, "MIMOAGENT_CACHE_DIR": str(CACHE), "MIMOAGENT_OBSERVERS": "0"}
        t0 = time.monotonic()
        proc = subprocess.run(
            [
                str(Path(sys.executable).with_name("mimoagent")),
                "-c",
                str(cfg),
                "--dataset",
                str(data),
                "-o",
                str(out),
                "--workers",
                "1",
            ],
            env=env,
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=3600,
        )
        wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{cli}/{sandbox}: mimoagent exited {proc.returncode}\n{proc.stderr[-3000:]}")
    totals, clis = [], []
    for line in (out / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["exit_status"] != "submitted" or not rec["passed"]:
            raise SystemExit(f"{cli}/{sandbox}: {rec['instance_id']} ended {rec['exit_status']}: {rec['error']}")
        rollout = out / rec["output_dir"]
        totals.append(json.loads((rollout / "traj.json").read_text())["timings"]["total_s"])
        found = _EXITED.search((rollout / "instance.log").read_text())
        if found is None:
            raise SystemExit(f"{cli}/{sandbox}: no `exited … after` line in {rollout / 'instance.log'}")
        clis.append(float(found.group(1)))
    framework = [t - c for t, c in zip(totals, clis, strict=True)]
    return {
        "rollout": statistics.median(totals),
        "cli": statistics.median(clis),
        "framework": statistics.median(framework),
        "framework_max": max(framework),
        "outside": (wall - sum(totals)) / len(totals),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cli", action="append", choices=["codex", "claude-code"], help="default: both")
    p.add_argument("--sandbox", action="append", choices=["none", "bwrap"], help="default: both")
    p.add_argument("--rollouts", type=int, default=5)
    args = p.parse_args()
    print(f"cli rollout · {machine()}")
    print(f"\nper rollout, s (median of {args.rollouts} rollouts in one run, 1 worker; target: framework ≤ 0.5 s)")
    print(f"  {'CLI':<12}{'sandbox':<9}{'rollout':>9}{'CLI':>8}{'framework':>11}{'(max)':>8}{'outside':>9}")
    with tempfile.TemporaryDirectory(prefix="mimo-bench-clirollout-") as tmp:
        for cli in args.cli or ["codex", "claude-code"]:
            for sandbox in args.sandbox or ["none", "bwrap"]:
                r = cell(cli, sandbox, args.rollouts, Path(tmp))
                print(
                    f"  {cli:<12}{sandbox:<9}{r['rollout']:>9.2f}{r['cli']:>8.2f}{r['framework']:>11.2f}"
                    f"{r['framework_max']:>8.2f}{r['outside']:>9.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
