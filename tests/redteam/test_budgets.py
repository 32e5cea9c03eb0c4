"""Hostile rollouts that make huge data for the runner to read, beside honest ones, in ONE real CLI run
whose runner sits in a memory cgroup of its own (400 MB, no swap): a read that grows with what the agent
made kills the runner (and the test) instead of the machine.

Each hostile row makes its data (60 MB of short lines, one 50 MB line, a sparse 10 GB file, /dev/zero
and /dev/urandom, floods of command output on stdout and stderr, a verifier that writes a 300 MB log),
reads it with the read tool, then solves the task: it must be recorded with reward 1, and the model must
have been told what was cut. Every honest row beside it must score 1. The runner's peak RSS (its VmHWM) must
stay under 300 MB. local+bwrap (the shipped training setting); the scripted model plays every row.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from testkit.budget_cases import EVAL, Call, MiB, bash, budget_config, budget_row, case_of, junk, play, read, write_rows
from testkit.scripted_llm import ScriptedLLM
from tests.host_needs import need_bwrap, unavailable
from tests.redteam.runner_rss import wait_with_peak_rss

REPO = Path(__file__).resolve().parents[2]
RUNNER_CGROUP_BYTES = 400 * MiB
RUNNER_RSS_BUDGET = 300 * MiB
# case -> (tool calls before solving, what the model must have been shown, extra row fields)
HOSTILE: dict[str, tuple[list[Call], list[str], dict[str, Any]]] = {
    "huge_file": (
        [bash(junk("big.txt", 'yes abcdefghi | head -c 60M > "$f"')), read("junk/big.txt")],
        [f"[truncated: file is {60 * MiB} bytes, showed {2 * MiB}]"],
        {},
    ),
    "one_line": (
        [bash(junk("line.txt", "head -c 50M /dev/zero | tr '\\0' x > \"$f\"")), read("junk/line.txt")],
        [f"[truncated: file is {50 * MiB} bytes, showed {2 * MiB}]", "characters elided"],
        {},
    ),
    "sparse_file": (
        [
            bash(junk("sparse.txt", 'printf \'start\\n\' > "$f" && truncate -s 10G "$f"')),
            read("junk/sparse.txt", end_line=1),
        ],
        ["junk/sparse.txt looks like a binary file"],
        {},
    ),  # its first 2 MiB: NULs after a line
    "devices": (
        [read("/dev/zero"), read("/dev/urandom")],
        ["/dev/zero looks like a binary file", "/dev/urandom looks like a binary file"],
        {},
    ),
    "stdout_flood": ([bash("yes out-flood | head -c 400M; echo done")], ["characters elided"], {}),
    "stderr_flood": ([bash("yes err-flood | head -c 400M >&2; echo done")], ["characters elided"], {}),
    "verifier_log_flood": (
        [bash("echo hello")],
        [],
        {
            "eval_script": "mkdir -p /logs/verifier; head -c 300M /dev/zero | tr '\\0' v > "
            "/logs/verifier/huge.log; " + EVAL
        },
    ),
}
HONEST = [f"honest_{n}" for n in range(len(HOSTILE))]


def _memory_cgroup() -> tuple[str, bool]:
    """A fresh memory cgroup for the runner (under the test's own), and whether it is cgroup v2."""
    from mimo_core.environments.local.cgroups import parent_dirs

    parent = parent_dirs().get("memory")
    if parent is None:
        unavailable("no writable memory cgroup to put the runner in (needs root and a memory controller)")
    folder = os.path.join(parent, f"mimo-test-budgets-{secrets.token_hex(4)}")
    os.mkdir(folder)
    v2 = not os.path.exists(os.path.join(folder, "memory.limit_in_bytes"))
    if v2:
        Path(folder, "memory.max").write_text(str(RUNNER_CGROUP_BYTES))
        Path(folder, "memory.swap.max").write_text("0")
    else:
        Path(folder, "memory.limit_in_bytes").write_text(str(RUNNER_CGROUP_BYTES))
        try:
            Path(folder, "memory.memsw.limit_in_bytes").write_text(str(RUNNER_CGROUP_BYTES))
        except OSError:
            pass  # swap not accounted here: there is no swap to reach either
    return folder, v2


def _remove_cgroup(folder: str) -> None:
    for _ in range(50):
        try:
            os.rmdir(folder)
            return
        except OSError:
            time.sleep(0.1)


def _rows(answer: str) -> list[dict[str, Any]]:
    return [budget_row(name, answer, **(HOSTILE[name][2] if name in HOSTILE else {})) for name in [*HOSTILE, *HONEST]]


@pytest.fixture(scope="module")
def budget_run() -> Any:
    need_bwrap()
    cgroup, v2 = _memory_cgroup()
    folder = Path(tempfile.mkdtemp(prefix=".mimo-budgets-", dir=Path.home()))
    try:
        answer = secrets.token_hex(6)
        data, out = write_rows(folder, _rows(answer)), folder / "out"
        cfg = budget_config(folder)
        procs = os.path.join(cgroup, "cgroup.procs")
        with ScriptedLLM() as llm:
            llm.set_responder(play(lambda name: HOSTILE[name][0] if name in HOSTILE else [], answer))
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
                        "4",
                        "--run-id",
                        f"budgets-{secrets.token_hex(3)}",
                    ],
                    cwd=REPO,
                    env=env,
                    stdout=so,
                    stderr=se,
                    preexec_fn=lambda: Path(procs).write_text(str(os.getpid())),
                )
            returncode, peak_rss = wait_with_peak_rss(proc, timeout=1500)
            seconds = time.monotonic() - started
            requests = list(llm.requests)
        stderr = (folder / "stderr").read_bytes()
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
            "stderr": stderr.decode(errors="replace")[-4000:],
            "records": records,
            "shown": shown,
            "peak_rss": peak_rss,
            "seconds": seconds,
            "out": out,
            "v2": v2,
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        _remove_cgroup(cgroup)


def test_the_runner_survives_and_records_every_row(budget_run: dict[str, Any]) -> None:
    run = budget_run
    assert run["returncode"] == 0, run["stderr"]
    assert sorted(run["records"]) == sorted([*HOSTILE, *HONEST]), run["stderr"]
    print(f"runner peak RSS {run['peak_rss'] / MiB:.0f} MB, {run['seconds']:.0f} s")
    assert run["peak_rss"] < RUNNER_RSS_BUDGET, f"runner peak RSS {run['peak_rss'] / MiB:.0f} MB"


@pytest.mark.parametrize("case", HONEST)
def test_an_honest_row_beside_the_hostile_ones_scores_1(budget_run: dict[str, Any], case: str) -> None:
    rec = budget_run["records"].get(case)
    assert rec is not None, budget_run["stderr"]
    assert (rec["exit_status"], rec["reward"]) == ("submitted", 1.0), rec


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_row_is_cut_told_and_still_graded(budget_run: dict[str, Any], case: str) -> None:
    rec = budget_run["records"].get(case)
    assert rec is not None, budget_run["stderr"]
    assert (rec["exit_status"], rec["reward"]) == ("submitted", 1.0), rec.get("error")  # solved after the attack
    for note in HOSTILE[case][1]:
        assert note in budget_run["shown"].get(case, ""), budget_run["shown"].get(case, "")[-3000:]


def test_a_flooded_verifier_log_is_kept_within_the_evidence_limits(budget_run: dict[str, Any]) -> None:
    rec = budget_run["records"]["verifier_log_flood"]
    folder = budget_run["out"] / rec["output_dir"] / "verifier"
    kept = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert kept <= 32 * MiB + 8 * MiB  # max_evidence_bytes plus the command's own output file
    extra = json.loads((budget_run["out"] / rec["output_dir"] / "reward_extra_info.json").read_text())
    cut = json.dumps(extra)
    assert "verifier_evidence_truncated" in cut and "huge.log" in cut
