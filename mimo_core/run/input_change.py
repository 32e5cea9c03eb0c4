"""Has a finished rollout's input changed since it ran? Its config, its row, or its repository folder.

Every results line carries `input_fingerprint` (the redacted config and the row) and, for rows seeded
from a host folder, `repo_fingerprint` (every file's path, size and modification time under
`repo_dir`: a stat walk, done once per folder when a run is planned, not a read of the contents). A resume counts
the finished rollouts whose input no longer matches and says so once; `--rerun-changed` runs them again.
Lines written before `repo_fingerprint` existed are compared on what they carry.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from mimo_core.records.results import ResultRecord


def folder_signature(folder: str) -> str | None:
    digest = hashlib.sha256()
    try:
        for top, dirs, files in os.walk(folder):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(top, name)
                st = os.lstat(path)
                digest.update(
                    f"{os.path.relpath(path, folder)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode(
                        "utf-8", "surrogateescape"
                    )
                )
    except OSError:
        return None
    return digest.hexdigest()[:16]


def repo_fingerprint(task: Any, seen: dict[str, str | None] | None = None) -> str | None:
    """A short hash of the row's repository folder as it is now, or None (no folder, or unreadable).
    `seen` memoises folders across the rows of one plan."""
    repo_dir = getattr(task, "repo_dir", None)
    if not repo_dir:
        return None
    folder = str(Path(task.resolve(repo_dir)).resolve())
    seen = {} if seen is None else seen
    if folder not in seen:
        seen[folder] = folder_signature(folder) if os.path.isdir(folder) else None
    return seen[folder]


def input_changed(record: ResultRecord, fingerprint: str, repo: str | None) -> bool:
    """The record ran with another config or row, or another state of its repository folder."""
    if record.input_fingerprint is not None and record.input_fingerprint != fingerprint:
        return True
    return record.repo_fingerprint is not None and repo is not None and record.repo_fingerprint != repo
