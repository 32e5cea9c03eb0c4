"""Base repositories prepared once per task per process, then copied into each rollout's sandbox.

`git init` + `add` + `commit` + `update-ref` in every sandbox cost ~45 ms of CPU per rollout. When the
starting files come from the host (`repo_dir` or `repo_archive`) and no setup script changes them, the
same repository, base commit and `refs/mimo/base` are built once on the host and copied in with the
files: a plain file copy. The commit is the one the sandbox would make (fixed identity and dates, so its
hash depends only on the tree). Without git on the host, or for a folder that is already a repository,
callers fall back to making the base in the sandbox.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

from mimo_core.base.host_cancel import copy_tree, run_stoppable
from mimo_core.datasets.git import BASE_REF, GIT, GIT_ENV

_lock = threading.Lock()
_key_locks: dict[str, threading.Lock] = {}
_prepared: dict[str, Path | None] = {}
_root: Path | None = None


def _cache_root() -> Path:
    """In the process's labelled scratch folder: a runner killed before its exit leaves it for the
    next run's sweep, not in the temp dir for good."""
    global _root
    if _root is None:
        from mimo_core.environments.local.cleanup import process_scratch

        _root = process_scratch() / "base-repos"
        _root.mkdir(exist_ok=True)
    return _root


@functools.cache
def _host_has_git() -> bool:
    return shutil.which("git") is not None and shutil.which("tar") is not None


def _key(task: Any) -> str | None:
    if task.repo_archive:
        return "archive-" + hashlib.sha1(task.repo_archive.encode()).hexdigest()
    if task.repo_dir:
        return "dir-" + hashlib.sha1(str(task.resolve(task.repo_dir).resolve()).encode()).hexdigest()
    return None


def _git_env() -> dict[str, str]:
    """Hermetic: the host user's git configuration never shapes the base commit."""
    return {**os.environ, **GIT_ENV, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def _build(task: Any, dest: Path) -> bool:
    """Files, then the repository with its base commit and ref; False when this task cannot use it."""
    if task.repo_archive:
        dest.mkdir()
        archive = dest.with_suffix(".tar.gz")
        archive.write_bytes(base64.b64decode(task.repo_archive))
        try:
            res = run_stoppable(["tar", "-xzf", str(archive), "-C", str(dest)], "the repository unpacking")
            if res.returncode != 0:
                return False  # the sandbox path reports the bad archive with its own message
        finally:
            archive.unlink()
    else:
        src = task.resolve(task.repo_dir)
        if not src.is_dir():
            return False  # the sandbox path reports the missing folder with its own message
        dest.mkdir()
        copy_tree(src, dest)
    if (dest / ".git").exists():
        return False  # a repository already: the sandbox records its HEAD as the base
    # Objects and refs packed, empty folders gone: each copy writes a handful of files whatever the repo's size.
    git = f"{GIT} -c core.logAllRefUpdates=false -c gc.auto=0 -c maintenance.auto=false"
    script = (
        f"git init -q --template= && {git} add -A && {git} commit -q --allow-empty -m base && "
        f"{git} update-ref {BASE_REF} HEAD && {git} repack -a -d -q -n && {git} pack-refs --all && "
        "rm -rf .git/COMMIT_EDITMSG .git/info && find .git -mindepth 1 -type d -empty -delete && "
        "mkdir -p .git/refs"
    )
    res = run_stoppable(["sh", "-c", script], "the base commit of the repository", cwd=dest, env=_git_env())
    return res.returncode == 0


def prepared_sha(prepared: Path) -> str | None:
    """The base commit of a prepared repository (its packed refs name it), read on the host."""
    refs = prepared / ".git" / "packed-refs"
    try:
        for line in refs.read_text().splitlines():
            sha, _, ref = line.partition(" ")
            if ref == BASE_REF:
                return sha
    except OSError:
        return None
    return None


def prepared_base(task: Any) -> Path | None:
    """A host folder holding the task's starting files and its git base, or None (set it up in the sandbox).
    Only for tasks seeded from the host with no setup script (which could change the base)."""
    if getattr(task, "setup_script", None) or not _host_has_git():
        return None
    key = _key(task)
    if key is None:
        return None
    with _lock:
        key_lock = _key_locks.setdefault(key, threading.Lock())
    with key_lock:
        if key not in _prepared:
            dest = _cache_root() / key
            shutil.rmtree(dest, ignore_errors=True)
            try:
                _prepared[key] = dest if _build(task, dest) else None
            except (OSError, subprocess.CalledProcessError):
                _prepared[key] = None
        return _prepared[key]
