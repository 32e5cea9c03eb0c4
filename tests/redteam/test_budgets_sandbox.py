"""Hostile rollouts that go past their sandbox's memory or disk budget, beside honest ones, in ONE real
CLI run (local+bwrap) whose runner sits in a memory cgroup of its own (the sandboxes' cgroups are made
under it): a budget that is not enforced takes the runner down with it instead of the machine.

Every row has the same budgets (memory_mb 256, storage_mb 200). Each hostile row attacks, then solves the
task anyway: it must end as the agent's failure (`agent_error`, reward exactly 0, `budget_exceeded` and
its reason recorded), never as an infrastructure error. Every honest row beside them must score 1. The
variants: a fork-and-allocate loop, /tmp and /dev/shm (tmpfs, charged to the sandbox's cgroup) filled
past the memory budget, the disk filled past the disk budget by one huge file, a sparse file filled in,
and many small files; and 3 GB of command output, which must cost neither budget (only the head and tail
of a command's output file stay on disk).
"""

from __future__ import annotations

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
from typing import Any

import pytest
import yaml

from testkit.scripted_llm import Reply, Request, ScriptedLLM
from tests.host_needs import need_bwrap, unavailable
from tests.redteam.runner_rss import wait_with_peak_rss

REPO = Path(__file__).resolve().parents[2]
MiB = 1 << 20
MEMORY_MB, STORAGE_MB, WORKERS = 256, 200, 4
RUNNER_CGROUP_BYTES = (WORKERS * MEMORY_MB + 400) * MiB  # the sandboxes' cgroups count in it
RUNNER_RSS_BUDGET = 300 * MiB
EVAL = (
    'mkdir -p /logs/verifier; if [ "$(cat solved.txt 2>/dev/null)" = "$(cat /tests/answer.txt)" ]; '
    "then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi"
)
SOLVE = "echo {answer} > solved.txt && echo solved"

# case -> (the attack, the budget it must be ended for: memory | disk | None for "costs neither")
HOSTILE: dict[str, tuple[str, str | None]] = {
    "fork_allocate": (
        "for i in $(seq 12); do (head -c 100M /dev/zero | tail -c 100M > /dev/null) & done; wait; echo forked",
        "memory",
    ),
    "tmp_fill": ("head -c 400M /dev/zero > /tmp/fill; echo rc=$?", "memory"),
    "shm_fill": ("head -c 400M /dev/zero > /dev/shm/fill; echo rc=$?", "memory"),
    "disk_one_file": ("head -c 300M /dev/zero > big.bin; echo rc=$?", "disk"),
    "disk_sparse_filled": (
        'f="$HOME/sparse" && truncate -s 20G "$f" && for o in $(seq 0 299); do '
        'dd if=/dev/zero of="$f" bs=1M count=1 seek=$((o * 50)) conv=notrunc status=none; done; '
        'ls -ls "$f"',
        "disk",
    ),
    "disk_many_small": (
        'mkdir -p "$HOME/many" && for i in $(seq 50000); do echo x > "$HOME/many/$i"; done; echo made',
        "disk",
    ),
    "output_flood": ("yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 3G; echo done", None),
}
HONEST = [f"honest_{n}" for n in range(4)]


def _memory_cgroup() -> str:
    from mimo_core.environments.local.cgroups import parent_dirs

    parent = parent_dirs().get("memory")
    if parent is None:
        unavailable("no writable memory cgroup to put the runner in (needs root and a memory controller)")
    folder = os.path.join(parent, f"mimo-test-sandbox-budgets-{secrets.token_hex(4)}")
    os.mkdir(folder)
    if os.path.exists(os.path.join(folder, "memory.limit_in_bytes")):
        Path(folder, "memory.limit_in_bytes").write_text(str(RUNNER_CGROUP_BYTES))
        try:
            Path(folder, "memory.memsw.limit_in_bytes").write_text(str(RUNNER_CGROUP_BYTES))
        except OSError:
            pass
    else:
        Path(folder, "memory.max").write_text(str(RUNNER_CGROUP_BYTES))
        Path(folder, "memory.swap.max").write_text("0")
    return folder


def _remove_cgroup(folder: str) -> None:
    for _ in range(50):
        try:
            os.rmdir(folder)
            return
        except OSError:
            time.sleep(0.1)


def _case(req: Request) -> str:
    user = next((str(m.get("content")) for m in req.body.get("messages") or [] if m.get("role") == "user"), "")
    return user.split("Budget case ", 1)[-1].split(".", 1)[0]


def _responder(answer: str) -> Any:
    def respond(req: Request) -> Reply:
        name = _case(req)
        calls = [*([HOSTILE[name][0]] if name in HOSTILE else []), SOLVE.replace("{answer}", answer)]
        n = req.n_assistant_turns
        if n < len(calls):
            return Reply(tool_calls=[("bash", {"command": calls[n]})])
        return Reply(tool_calls=[("submit", {"message": "done"})])

    return respond


@pytest.fixture(scope="module")
def run() -> Any:
    need_bwrap()
    cgroup = _memory_cgroup()
    folder = Path(tempfile.mkdtemp(prefix=".mimo-sandbox-budgets-", dir=Path.home()))
    try:
        (folder / "repo").mkdir()
        (folder / "repo" / "README.md").write_text("A task.\n")
        answer = secrets.token_hex(6)
        rows = [
            {
                "instance_id": name,
                "dataset_type": "generic",
                "repo_dir": "repo",
                "network": False,
                "memory_mb": MEMORY_MB,
                "storage_mb": STORAGE_MB,
                "eval_script": EVAL,
                "problem_statement": f"Budget case {name}. Write {answer} to solved.txt.",
                "test_files": {"answer.txt": answer},
            }
            for name in [*HOSTILE, *HONEST]
        ]
        data, out = folder / "tasks.jsonl", folder / "out"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        cfg = folder / "budgets.yaml"
        cfg.write_text(
            yaml.safe_dump(
                {
                    "agent": {"type": "default", "step_limit": 6, "observation_max_chars": 2000},
                    "environment": {
                        "environment_class": "local",
                        "sandbox": "bwrap",
                        "timeout": 120,
                        "backend_kwargs": {"root": str(folder / "sandboxes")},
                    },
                    "model": {
                        "model_name": "hostile",
                        "protocol": "chat",
                        "model_kwargs": {
                            "base_url": "${MIMO_TEST_BASE_URL}",
                            "api_key": "not-a-real-key-sbudgets",
                            "max_output_tokens": 64,
                        },
                        "retry": {"max_attempts": 2, "initial_delay": 0.01, "max_delay": 0.05, "timeout": 60},
                    },
                }
            )
        )
        procs = os.path.join(cgroup, "cgroup.procs")
        free_before = shutil.disk_usage(folder).free
        with ScriptedLLM() as llm:
            llm.set_responder(_responder(answer))
            env = {**os.environ, "MIMO_TEST_BASE_URL": llm.openai_base_url, "MIMOAGENT_OBSERVERS": "0"}
            started = time.monotonic()
            with open(folder / "stdout", "wb") as so, open(folder / "stderr", "wb") as se:
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
                        str(WORKERS),
                        "--run-id",
                        f"sbudgets-{secrets.token_hex(3)}",
                    ],
                    cwd=REPO,
                    env=env,
                    stdout=so,
                    stderr=se,
                    preexec_fn=lambda: Path(procs).write_text(str(os.getpid())),
                )
            least_free = [free_before]

            def watch_disk() -> None:  # the host's disk, as the run goes: the budgets bound what it loses
                while proc.poll() is None:
                    least_free[0] = min(least_free[0], shutil.disk_usage(folder).free)
                    time.sleep(0.2)

            watcher = threading.Thread(target=watch_disk, daemon=True)
            watcher.start()
            returncode, peak_rss = wait_with_peak_rss(proc, timeout=900)
            watcher.join()
            seconds = time.monotonic() - started
        results = out / "results.jsonl"
        records = {}
        for line in results.read_text().splitlines() if results.exists() else []:
            rec = json.loads(line)
            records[rec["instance_id"]] = rec
        yield {
            "returncode": returncode,
            "records": records,
            "out": out,
            "stderr": (folder / "stderr").read_bytes().decode(errors="replace")[-4000:],
            "peak_rss": peak_rss,
            "seconds": seconds,
            "disk_used": free_before - least_free[0],
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        _remove_cgroup(cgroup)


def test_the_runner_survives_and_records_every_row(run: dict[str, Any]) -> None:
    assert run["returncode"] == 0, run["stderr"]
    assert sorted(run["records"]) == sorted([*HOSTILE, *HONEST]), run["stderr"]
    print(
        f"runner peak RSS {run['peak_rss'] / MiB:.0f} MB, host disk used at most {run['disk_used'] / MiB:.0f} MB, "
        f"{run['seconds']:.0f} s"
    )
    assert run["peak_rss"] < RUNNER_RSS_BUDGET


@pytest.mark.parametrize("case", HONEST)
def test_an_honest_row_within_the_same_budgets_scores_1(run: dict[str, Any], case: str) -> None:
    rec = run["records"][case]
    assert (rec["exit_status"], rec["reward"]) == ("submitted", 1.0), rec


@pytest.mark.parametrize("case", [c for c, (_, kind) in HOSTILE.items() if kind])
def test_a_row_past_its_budget_is_the_agents_0_with_the_reason(run: dict[str, Any], case: str) -> None:
    rec = run["records"][case]
    kind = HOSTILE[case][1]
    assert (rec["exit_status"], rec["reward"]) == ("agent_error", 0.0), rec
    assert rec["grading"]["budget_exceeded"] == kind, rec
    assert rec["error"].startswith(f"{kind} budget exceeded: "), rec["error"]
    assert f"budget ({MEMORY_MB if kind == 'memory' else STORAGE_MB} MB" in rec["error"], rec["error"]
    extra = json.loads((run["out"] / rec["output_dir"] / "reward_extra_info.json").read_text())
    assert extra["budget_exceeded"] == kind and extra["reward"] == 0.0


def test_three_gb_of_output_costs_no_budget_and_is_graded(run: dict[str, Any]) -> None:
    rec = run["records"]["output_flood"]
    assert (rec["exit_status"], rec["reward"]) == ("submitted", 1.0), rec
    assert "budget_exceeded" not in rec["grading"]
