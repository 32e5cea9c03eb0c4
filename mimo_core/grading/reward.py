"""Reward files written by verifiers, and the Grade records built from them."""

from __future__ import annotations

import json
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


def read_reward(env: Environment, verifier_dir: str, output: str = "") -> Grade:
    """Read `reward.json` (reward + extra fields) or `reward.txt` (a number) from `verifier_dir`."""
    extra: dict[str, Any] = {"verifier_output_tail": tail(output)} if output else {}
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
