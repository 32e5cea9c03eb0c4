"""Reward files written by verifiers, and the Grade records built from them.

The reward is the verifier's, read once and checked: exactly the reward files the task's verifier names
(`reward_names`), each bounded; a reward file it does not name, two that disagree, or a process still
alive once the verifier has returned void the verdict (reward 0 and a `forged_verdict` finding); a
verifier that timed out or was killed by a signal is a grading error, never a pass."""

from __future__ import annotations

import json
import math
import shlex
from typing import Any

from mimo_core.containment.events import Kind
from mimo_core.environments.base import Environment
from mimo_core.grading.grade import Finding, Grade

TAIL_CHARS = 4000
CRASH_SENTINEL = -1.0
REWARD_FILES = ("reward.json", "reward.txt")
MAX_REWARD_BYTES = 64 * 1024  # a verifier's reward file is a few bytes; a bigger one is not its write
FORGED: Kind = "forged_verdict"


def tail(text: str, limit: int = TAIL_CHARS) -> str:
    return text if len(text) <= limit else f"[... {len(text) - limit} chars elided]\n" + text[-limit:]


def reward_names(*scripts: str) -> tuple[str, ...]:
    """The reward files a verifier's contract names, from the verifier's own texts (its script, the
    files it runs): only `reward.txt` mentioned → that one, only `reward.json` → that one; both or
    neither (a name built at run time) → both."""
    text = "\n".join(s for s in scripts if s)
    named = tuple(n for n in REWARD_FILES if n in text)
    return named if len(named) == 1 else REWARD_FILES


def void(grade_or_details: Grade | dict[str, Any], finding: Finding) -> Grade:
    """The verdict made void by `finding`: reward 0, not passed, the reason in `void_reason`."""
    if isinstance(grade_or_details, Grade):
        grade = grade_or_details.model_copy(deep=True)
    else:
        grade = Grade(details=dict(grade_or_details))
    finding = finding.model_copy(update={"zeroes": True})
    grade.reward, grade.passed, grade.infra_error = 0.0, False, None
    grade.details["reward"] = 0.0
    grade.details["void_reason"] = finding.detail
    grade.findings.append(finding)
    return grade


def forged(details: dict[str, Any], detail: str) -> Grade:
    return void(details, Finding(kind=FORGED, detail=detail, zeroes=True))


def grade_from_reward(reward: float, details: dict[str, Any]) -> Grade:
    """A verdict from a number; the crash sentinel is an infrastructure error, never a 0."""
    details = {**details, "reward": reward}
    if reward == CRASH_SENTINEL:
        return Grade(reward=None, details=details, infra_error="verifier crashed (reward -1)")
    return Grade(reward=reward, passed=reward >= 1.0, details=details)


def quiesce(env: Environment) -> int:
    """Kill whatever runs in the sandbox now (GradingSeam.end_processes), before a verifier starts and
    before its reward is read: grading steps that ran the agent's code (a repository's git config, its
    build) cannot leave a process behind to rewrite the reward. How many processes were killed (0 for a
    backend without `end_processes`)."""
    end = getattr(env, "end_processes", None)
    if end is None:
        return 0
    killed = end()
    return killed if isinstance(killed, int) and not isinstance(killed, bool) else 0


def _kinds(env: Environment, verifier_dir: str) -> dict[str, tuple[str, int]]:
    """What the folder and each reward file are (link, file, dir, other, or missing) and a file's size.
    Asked once every process is dead, so nothing can swap them between this look and the read."""
    names = {"dir": verifier_dir, **{n: f"{verifier_dir}/{n}" for n in REWARD_FILES}}
    script = "; ".join(
        f"if [ -L {shlex.quote(p)} ]; then echo '{k} link'; elif [ -f {shlex.quote(p)} ]; then "
        f'echo "{k} file $(wc -c < {shlex.quote(p)})"; '
        f"elif [ -d {shlex.quote(p)} ]; then echo '{k} dir'; elif [ -e {shlex.quote(p)} ]; then echo '{k} other'; "
        f"else echo '{k} missing'; fi"
        for k, p in names.items()
    )
    res = env.execute(script, timeout=60)
    out: dict[str, tuple[str, int]] = {}
    for line in res.output.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in names:
            size = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else -1
            out[parts[0]] = (parts[1], size)
    return out


def _read_text(env: Environment, path: str) -> str | None:
    try:
        data = env.read_file(path)
    except Exception:  # each backend signals a missing file its own way
        return None
    return data[: MAX_REWARD_BYTES + 1].decode("utf-8", errors="replace")


def _parse(name: str, raw: str) -> tuple[float, dict[str, Any]]:
    """(reward, extra fields) from one reward file; ValueError when it holds no reward."""
    if name == "reward.txt":
        try:
            reward = float(raw.strip())
        except ValueError:
            raise ValueError(f"reward.txt is not a number: {raw.strip()[:100]!r}") from None
        if not math.isfinite(reward):
            raise ValueError(f"reward.txt is not a finite number: {raw.strip()[:100]!r}")
        return reward, {}
    try:
        data = json.loads(raw)
        if not isinstance(data, dict):
            data = {"reward": data}
        value = data["reward"]
        if isinstance(value, bool):
            raise TypeError("reward is a bool, not a number")
        reward = float(value)
        if not math.isfinite(reward):
            raise ValueError("reward is not a finite number")
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        raise ValueError(f"reward.json is not valid ({type(e).__name__}: {e})") from None
    return reward, data


def _abnormal_exit(exit_code: int | None) -> str | None:
    if exit_code is None or 0 <= exit_code <= 128:
        return None
    signal_no = -exit_code if exit_code < 0 else exit_code - 128
    return f"the verifier was killed by signal {signal_no} (exit code {exit_code})"


def read_reward(
    env: Environment,
    verifier_dir: str,
    output: str = "",
    *,
    names: tuple[str, ...] | None = None,
    exit_code: int | None = None,
    timed_out: bool = False,
) -> Grade:
    """The verifier's verdict from the reward files in `verifier_dir`; call it right after the verifier's
    command returned.

    First every process still running in the sandbox is killed, and counted: a process that outlived the
    verifier could have rewritten the reward after the verifier wrote it, so any voids the verdict. Then
    the folder and the files must be what the verifier makes (a link, a FIFO or a folder where the reward
    should be is a grading error); only the files `names` lists are read (default both), each at most
    `MAX_REWARD_BYTES`; a reward file present that `names` does not list, two that disagree, or one over
    the cap void the verdict. A verifier that timed out is a grading error whatever it wrote; one that was
    killed (`exit_code` > 128 or negative) is one too, unless a reward file already exists: then the kill
    came after a write the verifier never got to confirm (code under test forging, then killing it), void."""
    lingering = quiesce(env)
    names = tuple(n for n in REWARD_FILES if n in (names or REWARD_FILES)) or REWARD_FILES
    extra: dict[str, Any] = {"verifier_output_tail": tail(output)} if output else {}
    if exit_code is not None:
        extra["verifier_exit_code"] = exit_code
    if lingering:
        extra["processes_after_verifier"] = lingering
    if timed_out:
        return Grade(details=extra, infra_error="the verifier timed out: no reward is read")
    if lingering:
        return forged(
            extra,
            f"{lingering} process(es) outlived the verifier: the reward could have been "
            "rewritten after the verifier wrote it",
        )
    kinds = _kinds(env, verifier_dir)
    if (killed := _abnormal_exit(exit_code)) is not None:
        written = [
            n
            for n in REWARD_FILES
            if kinds.get(n, ("missing", -1))[0] != "missing" and kinds.get(n, ("missing", -1))[1] != 0
        ]  # (a redirection the shell opened is empty)
        if written:  # a verifier writes its reward last: one killed after a reward file exists was cut short
            return forged(
                extra,
                f"{killed} with {' and '.join(written)} already written: the reward is not the verifier's last word",
            )
        return Grade(details=extra, infra_error=f"{killed}: no reward is read")
    kind = kinds.get("dir", ("missing", -1))[0]
    if kind not in ("dir", "missing"):
        return Grade(
            details=extra,
            infra_error=f"the verifier's folder {verifier_dir} is a {kind}, not a folder: no reward is read from it",
        )
    for name in REWARD_FILES:
        kind = kinds.get(name, ("missing", -1))[0]
        if name not in names and kind != "missing":
            return forged(
                extra,
                f"{verifier_dir}/{name} exists, but the task's verifier writes only "
                f"{' and '.join(names)}: not the verifier's write",
            )
    for name in names:
        kind = kinds.get(name, ("missing", -1))[0]
        if kind not in ("file", "missing"):
            return Grade(
                details=extra,
                infra_error=f"{verifier_dir}/{name} is a {kind}, not a regular file: no reward is read from it",
            )
    read: dict[str, tuple[float, dict[str, Any]]] = {}
    for name in names:
        kind, size = kinds.get(name, ("missing", -1))
        if kind != "file":
            continue
        if size > MAX_REWARD_BYTES:
            return forged(
                extra, f"{verifier_dir}/{name} is {size} bytes (over {MAX_REWARD_BYTES}): not a verifier's reward file"
            )
        raw = _read_text(env, f"{verifier_dir}/{name}")
        if raw is None:
            continue
        if len(raw.encode()) > MAX_REWARD_BYTES:
            return forged(
                extra, f"{verifier_dir}/{name} is over {MAX_REWARD_BYTES} bytes: not a verifier's reward file"
            )
        try:
            read[name] = _parse(name, raw)
        except ValueError as e:
            return Grade(details={**extra, "reward_file": raw[:500]}, infra_error=str(e))
    if not read:
        return Grade(details=extra, infra_error=f"verifier wrote no reward file in {verifier_dir}")
    if len({reward for reward, _ in read.values()}) > 1:
        values = ", ".join(f"{n}={r:g}" for n, (r, _) in read.items())
        return forged(extra, f"the reward files disagree ({values}): the verdict is not the verifier's")
    reward, data = read.get("reward.json") or read["reward.txt"]
    return grade_from_reward(reward, {**data, **extra})


def apply_failed_grade(log: str) -> Grade:
    """A submission that does not apply is the solution's failure (reward 0), not the grader's."""
    return Grade(reward=0.0, passed=False, details={"reward": 0.0, "apply_failed": True, "apply_log": tail(log)})
