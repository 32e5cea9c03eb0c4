"""Reward files written by verifiers, and the Grade records built from them."""

from __future__ import annotations

import json
import shlex
from typing import Any

from mimo_core.environments.base import Environment
from mimo_core.grading.grade import Grade

TAIL_CHARS = 4000
CRASH_SENTINEL = -1.0


def tail(text: str, limit: int = TAIL_CHARS) -> str:
    return text if len(text) <= limit else f"[... {len(text) - limit} chars elided]\n" + text[-limit:]


def _read_text(env: Environment, path: str) -> str | None:
    try:
        return env.read_file(path).decode("utf-8", errors="replace")
    except Exception:  # each backend signals a missing file its own way
        return None


def grade_from_reward(reward: float, details: dict[str, Any]) -> Grade:
    """A verdict from a number; the crash sentinel is an infrastructure error, never a 0."""
    details = {**details, "reward": reward}
    if reward == CRASH_SENTINEL:
        return Grade(reward=None, details=details, infra_error="verifier crashed (reward -1)")
    return Grade(reward=reward, passed=reward >= 1.0, details=details)


def quiesce(env: Environment) -> None:
    """Kill whatever runs in the sandbox now (GradingSeam.end_processes), before a verifier starts and
    before its reward is read: grading steps that ran the agent's code (a repository's git config, its
    build) cannot leave a process behind to rewrite the reward."""
    end = getattr(env, "end_processes", None)
    if end is not None:
        end()


def _kinds(env: Environment, verifier_dir: str) -> dict[str, str]:
    """What the folder and each reward file are: link, file, other, or missing. Asked once every process
    is dead, so nothing can swap them between this look and the read."""
    names = {"dir": verifier_dir, **{n: f"{verifier_dir}/{n}" for n in ("reward.json", "reward.txt")}}
    script = "; ".join(
        f"if [ -L {shlex.quote(p)} ]; then echo '{k} link'; elif [ -f {shlex.quote(p)} ]; then echo '{k} file'; "
        f"elif [ -d {shlex.quote(p)} ]; then echo '{k} dir'; elif [ -e {shlex.quote(p)} ]; then echo '{k} other'; "
        f"else echo '{k} missing'; fi" for k, p in names.items())
    res = env.execute(script, timeout=60)
    return dict(line.split(" ", 1) for line in res.output.splitlines() if " " in line)


def read_reward(env: Environment, verifier_dir: str, output: str = "") -> Grade:
    """Read `reward.json` (reward + extra fields) or `reward.txt` (a number) from `verifier_dir`.

    First every process still running in the sandbox is killed (code under test may have left one that
    writes the reward file), then the folder and the file must be what the verifier makes: a link, a
    FIFO or a folder where the reward should be is a grading error, never a pass."""
    quiesce(env)
    extra: dict[str, Any] = {"verifier_output_tail": tail(output)} if output else {}
    kinds = _kinds(env, verifier_dir)
    if kinds.get("dir") not in ("dir", "missing", None):
        return Grade(details=extra, infra_error=f"the verifier's folder {verifier_dir} is a {kinds['dir']}, "
                                                "not a folder: no reward is read from it")
    for name in ("reward.json", "reward.txt"):
        if kinds.get(name) not in ("file", "missing", None):
            return Grade(details=extra, infra_error=f"{verifier_dir}/{name} is a {kinds[name]}, not a regular "
                                                    "file: no reward is read from it")
    raw = _read_text(env, f"{verifier_dir}/reward.json")
    if raw is not None:
        try:
            data = json.loads(raw)
            if not isinstance(data, dict):
                data = {"reward": data}
            reward = float(data["reward"])
        except (ValueError, KeyError, TypeError) as e:
            return Grade(details={**extra, "reward_file": raw[:500]},
                         infra_error=f"reward.json is not valid ({type(e).__name__}: {e})")
        return grade_from_reward(reward, {**data, **extra})
    raw = _read_text(env, f"{verifier_dir}/reward.txt")
    if raw is not None:
        try:
            reward = float(raw.strip())
        except ValueError:
            return Grade(details={**extra, "reward_file": raw[:500]},
                         infra_error=f"reward.txt is not a number: {raw.strip()[:100]!r}")
        return grade_from_reward(reward, extra)
    return Grade(details=extra, infra_error=f"verifier wrote no reward file in {verifier_dir}")


def apply_failed_grade(log: str) -> Grade:
    """A submission that does not apply is the solution's failure (reward 0), not the grader's."""
    return Grade(reward=0.0, passed=False, details={"reward": 0.0, "apply_failed": True, "apply_log": tail(log)})
