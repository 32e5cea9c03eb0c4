"""The budget red-team cases on docker: hostile rollouts beside honest ones in ONE real CLI run
(`environment_class: docker`, the tests' own dockerd and base image, nothing pulled) whose runner sits in
a memory cgroup of its own (400 MB, no swap): a read that grows with what the agent made kills the runner
(and the test) instead of the machine. The containers' memory is the engine's, not the runner's.

Every row has the same budgets (memory_mb 256, storage_mb 200; the small-files flood 50). Each hostile row
attacks, then solves the task anyway. What each must end as, never an infrastructure status:
- past a budget (a fork-and-allocate loop: memory; 200k small files: disk; a verifier's sparse 4 GB
  reward.json: disk, as docker's measure of a container's files counts a sparse file whole): the agent's
  failure (`agent_error`, reward 0, `budget_exceeded` and its reason recorded);
- 150 MB of padding before a valid `{"reward": 1}` in the verifier's reward.json: the verdict is void
  (reward 0, the file's size said), the file never read whole;
- a 60 MB file read by the read tool, 150 MB floods on stdout and on stderr: solved (reward 1), the model
  told what was cut; /dev/shm filled: docker's 64 MB tmpfs refuses the rest, solved.
Every honest row beside them must score 1, and the runner's peak RSS (its VmHWM) stay under 300 MB.
"""

from __future__ import annotations

import json
import os
import re
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

from testkit.budget_cases import EVAL, Call, MiB, bash, budget_row, case_of, junk, play, read, write_rows
from testkit.dockerd import BASE_IMAGE
from testkit.scripted_llm import ScriptedLLM
from tests.host_needs import unavailable
from tests.redteam.runner_rss import wait_with_peak_rss

REPO = Path(__file__).resolve().parents[2]
MEMORY_MB, STORAGE_MB, MANY_STORAGE_MB, WORKERS = 256, 200, 50, 4
RUNNER_CGROUP_BYTES = 400 * MiB
RUNNER_RSS_BUDGET = 300 * MiB
_MANY = (
    'mkdir -p "$HOME/many" && cd "$HOME/many" && s=$(printf "%2048s" x) && '
    'for i in $(seq 200000); do printf %s "$s" > $i; done; echo made'
)
# A verifier (the code under test, at grading time) that writes a reward file of gigabytes before its own.
_SPARSE_REWARD = "mkdir -p /logs/verifier; truncate -s 4G /logs/verifier/reward.json; " + EVAL
_PADDED_REWARD = (
    "mkdir -p /logs/verifier; head -c 150M /dev/zero | tr '\\0' ' ' > /logs/verifier/reward.json; "
    "echo '{\"reward\": 1}' >> /logs/verifier/reward.json; " + EVAL
)

# case -> (tool calls before solving, the outcome: "memory"/"disk" (that budget), "void" (the verdict
# voided, reward 0) or "solved" (reward 1), what the model must have been shown, extra row fields)
HOSTILE: dict[str, tuple[list[Call], str, list[str], dict[str, Any]]] = {
    "huge_file_read": (
        [bash(junk("big.txt", 'yes abcdefghi | head -c 60M > "$f"')), read("junk/big.txt")],
        "solved",
        [f"[truncated: file is {60 * MiB} bytes, showed {2 * MiB}]"],
        {},
    ),
    "output_floods": (
        [bash("yes out-flood | head -c 150M; echo done"), bash("yes err-flood | head -c 150M >&2; echo done")],
        "solved",
        ["characters elided"],
        {},
    ),
    "shm_fill": ([bash("head -c 400M /dev/zero > /dev/shm/fill; echo rc=$?")], "solved", ["No space left"], {}),
    # (docker's measure of the writable layer, SizeRw, counts a sparse file's apparent size: over the disk budget)
    "reward_sparse_4g": ([bash("echo hello")], "disk", [], {"eval_script": _SPARSE_REWARD}),
    "reward_padded_150m": ([bash("echo hello")], "void", [], {"eval_script": _PADDED_REWARD}),
    "fork_allocate": (
        [bash("for i in $(seq 12); do (head -c 100M /dev/zero | tail -c 100M > /dev/null) & done; wait; echo ok")],
        "memory",
        [],
        {},
    ),
    # (a disk budget of its own: 2 KB files, 200k of them, are past it after ~25k: SizeRw counts bytes, not files)
    "disk_many_small": ([bash(_MANY)], "disk", [], {"storage_mb": MANY_STORAGE_MB}),
}
HONEST = [f"honest_{n}" for n in range(3)]


def _memory_cgroup() -> str:
    from mimo_core.environments.local.cgroups import parent_dirs

    parent = parent_dirs().get("memory")
    if parent is None:
        unavailable("no writable memory cgroup to put the runner in (needs root and a memory controller)")
    folder = os.path.join(parent, f"mimo-test-docker-budgets-{secrets.token_hex(4)}")
    os.mkdir(folder)
    if os.path.exists(os.path.join(folder, "memory.limit_in_bytes")):
        Path(folder, "memory.limit_in_bytes").write_text(str(RUNNER_CGROUP_BYTES))
        try:
            Path(folder, "memory.memsw.limit_in_bytes").write_text(str(RUNNER_CGROUP_BYTES))
        except OSError:
            pass  # swap not accounted here: there is no swap to reach either
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


def _rows(answer: str) -> list[dict[str, Any]]:
    budgets = {"image": BASE_IMAGE, "memory_mb": MEMORY_MB, "storage_mb": STORAGE_MB}
    return [
        budget_row(name, answer, **{**budgets, **(HOSTILE[name][3] if name in HOSTILE else {})})
        for name in [*HOSTILE, *HONEST]
    ]


def _config(folder: Path) -> Path:
    cfg = {
        "agent": {"type": "default", "step_limit": 6, "observation_max_chars": 4000},
        "environment": {"environment_class": "docker", "timeout": 120, "backend_kwargs": {"pids_limit": 256}},
        "model": {
            "model_name": "hostile",
            "protocol": "chat",
            "model_kwargs": {
                "base_url": "${MIMO_TEST_BASE_URL}",
                "api_key": "not-a-real-key-dbudgets",
                "max_output_tokens": 64,
            },
            "retry": {"max_attempts": 2, "initial_delay": 0.01, "max_delay": 0.05, "timeout": 60},
        },
    }
    path = folder / "budgets-docker.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def run(dockerd: Any) -> Any:
    cgroup = _memory_cgroup()
    folder = Path(tempfile.mkdtemp(prefix=".mimo-docker-budgets-", dir=Path.home()))
    try:
        answer = secrets.token_hex(6)
        only = os.environ.get("MIMO_BUDGETS_ONLY")  # (debugging: a regex of the row ids to run)
        rows = [r for r in _rows(answer) if not only or re.search(only, r["instance_id"])]
        data, out = write_rows(folder, rows), folder / "out"
        cfg = _config(folder)
        procs = os.path.join(cgroup, "cgroup.procs")
        free_before = shutil.disk_usage(folder).free
        with ScriptedLLM() as llm:
            llm.set_responder(play(lambda name: HOSTILE[name][0] if name in HOSTILE else [], answer))
            env = {
                **os.environ,
                "DOCKER_HOST": dockerd.docker_host,
                "MIMO_TEST_BASE_URL": llm.openai_base_url,
                "MIMOAGENT_OBSERVERS": "0",
            }
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
                        f"dbudgets-{secrets.token_hex(3)}",
                    ],
                    cwd=REPO,
                    env=env,
                    stdout=so,
                    stderr=se,
                    preexec_fn=lambda: Path(procs).write_text(str(os.getpid())),
                )
            least_free = [free_before]

            def watch_disk() -> None:  # the host's disk (the engine's data root is on it too)
                while proc.poll() is None:
                    least_free[0] = min(least_free[0], shutil.disk_usage(folder).free)
                    time.sleep(0.2)

            watcher = threading.Thread(target=watch_disk, daemon=True)
            watcher.start()
            returncode, peak_rss = wait_with_peak_rss(proc, timeout=900)
            watcher.join()
            seconds = time.monotonic() - started
            requests = list(llm.requests)
        results = out / "results.jsonl"
        records = {}
        for line in results.read_text().splitlines() if results.exists() else []:
            rec = json.loads(line)
            records[rec["instance_id"]] = rec
        shown: dict[str, str] = {}
        for r in requests:
            text = "\n".join(str(m.get("content")) for m in r.body.get("messages") or [] if m.get("role") == "tool")
            shown[case_of(r)] = shown.get(case_of(r), "") + text
        yield {
            "returncode": returncode,
            "records": records,
            "shown": shown,
            "out": out,
            "stderr": (folder / "stderr").read_bytes().decode(errors="replace")[-4000:],
            "peak_rss": peak_rss,
            "seconds": seconds,
            "disk_used": free_before - least_free[0],
        }
    finally:
        if os.environ.get("MIMO_BUDGETS_KEEP"):  # (debugging: the run's folder stays, named on stderr)
            print(f"kept {folder}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)
        _remove_cgroup(cgroup)


def _why(run: dict[str, Any], rec: dict[str, Any]) -> str:
    """A record's outcome and the end of its instance.log, for a failure's message."""
    log = run["out"] / rec["output_dir"] / "instance.log"
    tail = log.read_text(errors="replace")[-2500:] if log.exists() else "(no instance.log)"
    return f"{rec['exit_status']} reward={rec['reward']} error={rec.get('error')!r}\n{tail}"


def test_the_runner_survives_and_records_every_row(run: dict[str, Any]) -> None:
    assert run["returncode"] == 0, run["stderr"]
    assert sorted(run["records"]) == sorted([*HOSTILE, *HONEST]), run["stderr"]
    print(
        f"runner peak RSS {run['peak_rss'] / MiB:.0f} MB, host disk used at most {run['disk_used'] / MiB:.0f} MB, "
        f"{run['seconds']:.0f} s"
    )
    assert run["peak_rss"] < RUNNER_RSS_BUDGET, f"runner peak RSS {run['peak_rss'] / MiB:.0f} MB"


@pytest.mark.parametrize("case", HONEST)
def test_an_honest_row_beside_the_hostile_ones_scores_1(run: dict[str, Any], case: str) -> None:
    rec = run["records"][case]
    assert (rec["exit_status"], rec["reward"]) == ("submitted", 1.0), _why(run, rec)


@pytest.mark.parametrize("case", [c for c, v in HOSTILE.items() if v[1] in ("memory", "disk")])
def test_a_row_past_its_budget_is_the_agents_0_with_the_reason(run: dict[str, Any], case: str) -> None:
    rec = run["records"][case]
    kind = HOSTILE[case][1]
    assert (rec["exit_status"], rec["reward"]) == ("agent_error", 0.0), _why(run, rec)
    assert rec["grading"]["budget_exceeded"] == kind, rec
    assert rec["error"].startswith(f"{kind} budget exceeded: "), rec["error"]
    budget = MEMORY_MB if kind == "memory" else HOSTILE[case][3].get("storage_mb", STORAGE_MB)
    assert f"budget ({budget} MB" in rec["error"], rec["error"]
    extra = json.loads((run["out"] / rec["output_dir"] / "reward_extra_info.json").read_text())
    assert extra["budget_exceeded"] == kind and extra["reward"] == 0.0


@pytest.mark.parametrize("case", [c for c, v in HOSTILE.items() if v[1] == "void"])
def test_a_reward_file_of_gigabytes_voids_the_verdict_unread(run: dict[str, Any], case: str) -> None:
    rec = run["records"][case]
    assert rec["reward"] == 0.0 and not rec["passed"], rec
    assert rec["exit_status"] == "submitted", rec  # graded: the agent's 0, not a grading error
    extra = json.loads((run["out"] / rec["output_dir"] / "reward_extra_info.json").read_text())
    assert "reward.json is " in extra["void_reason"] and "bytes (over 65536)" in extra["void_reason"], extra


@pytest.mark.parametrize("case", [c for c, v in HOSTILE.items() if v[1] == "solved"])
def test_a_row_within_its_budgets_is_cut_told_and_graded(run: dict[str, Any], case: str) -> None:
    rec = run["records"][case]
    assert (rec["exit_status"], rec["reward"]) == ("submitted", 1.0), _why(run, rec)
    assert "budget_exceeded" not in rec["grading"], rec
    shown = run["shown"].get(case, "")
    for note in HOSTILE[case][2]:
        assert note in shown, shown[-3000:]
    for elided in re.findall(r"\[\.\.\. (\d+) characters elided \.\.\.\]", shown):
        assert int(elided) < 8 * MiB, elided  # what the runner kept of 150 MB: MAX_CAPTURE's head and tail
