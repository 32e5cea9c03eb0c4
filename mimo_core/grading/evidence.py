"""The verifier's evidence, kept: everything it wrote under its logs folder plus its full output, copied
out of the sandbox before the sandbox goes, and a per-test summary for reward_extra_info.json."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

from mimo_core.base.redaction import redact, redact_bytes
from mimo_core.environments.base import Environment, read_head
from mimo_core.grading.grade import Grade
from mimo_core.grading.verifier_reports import summarise_folder
from mimo_core.limits import current_limits

EVIDENCE_DIR = "verifier"  # in the rollout folder: what the verifier wrote, and its whole output
OUTPUT_FILE = "verifier_output.txt"  # the verifier command's whole stdout+stderr (the record keeps a tail)
MAX_LISTED = 2000  # files of the logs folder considered one by one; more are left out (and counted)
_LINE = re.compile(r"^(\d+) \./(.+)$")
_REPORT = re.compile(r"(^|/)(reward\.[^/]*|[^/]*\.(json|xml|jsonl))$")


def _listing(env: Environment, folder: str) -> list[tuple[int, str]] | None:
    """(size, relative path) of every regular file under `folder`, or None when it cannot be listed.
    The command's output is capped by the backend (a flood of names keeps its head and tail)."""
    res = env.execute(f"cd {shlex.quote(folder)} && find . -type f -exec stat -c '%s %n' {{}} +", timeout=120)
    if res.returncode != 0 and not res.output.strip():
        return None
    found = []
    for line in res.output.splitlines():
        m = _LINE.match(line)
        if m and "/../" not in f"/{m.group(2)}/":
            found.append((int(m.group(1)), m.group(2)))
    return found


def _copy_bounded(env: Environment, folder: str, dest: Path, grade: Grade) -> None:
    """Copy the verifier's folder out within the limits: whole when it fits (one archive), else file by
    file, reports first then the smallest, each file at most `max_evidence_file_bytes` (a larger one keeps
    its first part) and all of them at most `max_evidence_bytes`. What was cut or left out is recorded."""
    limits = current_limits()
    per_file, total = limits.max_evidence_file_bytes, limits.max_evidence_bytes
    files = _listing(env, folder)
    if files is None:
        grade.details["verifier_evidence_error"] = "the verifier's folder could not be listed (no find/stat)"
        return
    if len(files) <= MAX_LISTED and sum(n for n, _ in files) <= total and all(n <= per_file for n, _ in files):
        env.copy_out(folder, dest)
        return
    files.sort(key=lambda f: (_REPORT.search(f[1]) is None, f[0]))
    used, cut, left_out = 0, [], []
    for size, rel in files[:MAX_LISTED]:
        room = min(per_file, total - used)
        if room <= 0:
            left_out.append(rel)
            continue
        target = dest / rel
        if not target.resolve().is_relative_to(dest.resolve()):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if size <= room:
            env.copy_out(f"{folder}/{rel}", target)
            used += size
            continue
        head = read_head(env, f"{folder}/{rel}", room)
        target.write_bytes(head.data)
        used += len(head.data)
        cut.append(f"{rel} ({size} bytes, kept {len(head.data)})")
    left_out += [rel for _, rel in files[MAX_LISTED:]]
    grade.details["verifier_evidence_truncated"] = {
        "max_evidence_file_bytes": per_file,
        "max_evidence_bytes": total,
        "files": len(files),
        "kept_bytes": used,
        "cut": cut[:50],
        "left_out": left_out[:50],
        "left_out_count": len(left_out),
    }


def keep_evidence(env: Environment, verifier_dir: str, output: str, grade: Grade, test_config: Any) -> None:
    """Copy `verifier_dir` to a host folder named in `grade.evidence_dir` (bounded: `limits.max_evidence_*`);
    add `tests` (the summary) to the grade's details. Copy failures are noted in the details, never
    fatal: the reward stands."""
    from mimo_core.environments.local.cleanup import process_scratch

    dest = Path(tempfile.mkdtemp(prefix="verifier-", dir=process_scratch()))
    try:
        _copy_bounded(env, verifier_dir, dest, grade)
    except Exception as e:
        grade.details["verifier_evidence_error"] = f"{type(e).__name__}: {e}"
    limit = current_limits().max_evidence_file_bytes
    dropped = sanitize(dest, limit)
    if dropped:
        grade.details["verifier_evidence_dropped"] = dropped[:50]
    if len(output) > limit:
        output = output[: limit // 2] + f"\n[... {len(output) - limit} characters elided ...]\n" + output[-limit // 2 :]
    (dest / OUTPUT_FILE).write_text(redact(output), encoding="utf-8", errors="replace")
    grade.evidence_dir = str(dest)
    if isinstance(test_config, str):
        try:
            test_config = json.loads(test_config)
        except ValueError:
            test_config = None
    summary = summarise_folder(dest, test_config)
    if summary is not None:
        grade.details["tests"] = summary.model_dump()


def sanitize(folder: Path, redact_limit: int | None = None) -> list[str]:
    """Make a copied-out folder safe to keep: links, FIFOs, sockets and devices are removed (a reader of the
    rollout folder must never be led outside it) and text files lose any registered secret. A file over
    `redact_limit` (default: `limits.max_evidence_file_bytes`) is cut to it first, so no secret is kept
    unredacted and no file is read whole. Returns the relative paths removed."""
    if redact_limit is None:
        redact_limit = current_limits().max_evidence_file_bytes
    dropped: list[str] = []
    for top, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            path = os.path.join(top, name)
            st = os.lstat(path)
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                os.unlink(path)
                dropped.append(os.path.relpath(path, folder))
            else:
                if st.st_size > redact_limit:
                    os.truncate(path, redact_limit)
                with open(path, "rb") as f:
                    data = f.read(redact_limit)
                clean = redact_bytes(data)
                if clean is not data:
                    Path(path).write_bytes(clean)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(top, d))]
    return sorted(dropped)


def keep_verifier_evidence(grade: Grade, rollout_dir: Path) -> None:
    """Move the verifier's copied logs folder into the rollout folder (`verifier/`)."""
    if not grade.evidence_dir:
        return
    dest = rollout_dir / EVIDENCE_DIR
    if dest.exists():
        shutil.rmtree(dest)
    shutil.move(grade.evidence_dir, dest)
    grade.evidence_dir = None
