"""The verifier's evidence, kept: everything it wrote under its logs folder plus its full output, copied
out of the sandbox before the sandbox goes, and a per-test summary for reward_extra_info.json."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

from mimo_core.environments.base import Environment
from mimo_core.grading.grade import Grade
from mimo_core.grading.verifier_reports import summarise_folder
from mimo_core.redaction import redact, redact_bytes

MAX_EVIDENCE_BYTES = 200 * 1024 * 1024  # a verifier that writes more keeps only its reports (*.json, reward.*)
EVIDENCE_DIR = "verifier"  # in the rollout folder: what the verifier wrote, and its whole output
OUTPUT_FILE = "verifier_output.txt"  # the verifier command's whole stdout+stderr (the record keeps a tail)


def _size(env: Environment, folder: str) -> int:
    res = env.execute(f"du -sb {shlex.quote(folder)} 2>/dev/null | cut -f1", timeout=60)
    try:
        return int(res.output.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return 0


def keep_evidence(env: Environment, verifier_dir: str, output: str, grade: Grade, test_config: Any) -> None:
    """Copy `verifier_dir` to a host folder named in `grade.evidence_dir`; add `tests` (the summary) to
    the grade's details. Copy failures are noted in the details, never fatal: the reward stands."""
    from mimo_core.environments.local.cleanup import process_scratch

    dest = Path(tempfile.mkdtemp(prefix="verifier-", dir=process_scratch()))
    try:
        if _size(env, verifier_dir) <= MAX_EVIDENCE_BYTES:
            env.copy_out(verifier_dir, dest)
        else:
            grade.details["verifier_evidence_truncated"] = f"over {MAX_EVIDENCE_BYTES} bytes: reports only"
            listing = env.execute(f"cd {shlex.quote(verifier_dir)} && find . -type f \\( -name '*.json' -o "
                                  "-name 'reward.*' \\) -size -20M", timeout=60)
            for rel in listing.output.split():
                env.copy_out(f"{verifier_dir}/{rel[2:]}", dest / rel[2:])
    except Exception as e:
        grade.details["verifier_evidence_error"] = f"{type(e).__name__}: {e}"
    dropped = sanitize(dest)
    if dropped:
        grade.details["verifier_evidence_dropped"] = dropped[:50]
    (dest / OUTPUT_FILE).write_text(redact(output), encoding="utf-8")
    grade.evidence_dir = str(dest)
    if isinstance(test_config, str):
        try:
            test_config = json.loads(test_config)
        except ValueError:
            test_config = None
    summary = summarise_folder(dest, test_config)
    if summary is not None:
        grade.details["tests"] = summary.model_dump()


def sanitize(folder: Path, redact_limit: int = 64 * 1024 * 1024) -> list[str]:
    """Make a copied-out folder safe to keep: links, FIFOs, sockets and devices are removed (a reader of the
    rollout folder must never be led outside it) and text files lose any registered secret. Returns the
    relative paths removed."""
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
            elif st.st_size <= redact_limit:
                data = Path(path).read_bytes()
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
