"""Values of configs and rows that are checked where they are given, so a bad one is an error at load
(naming the file and the key) and never the same failure in every rollout."""

from __future__ import annotations

import posixpath
import unicodedata
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field

MAX_SECONDS = 30 * 24 * 3600.0  # no timeout or limit is longer than a month (beyond it, clocks overflow)
Seconds = Annotated[float, Field(gt=0, le=MAX_SECONDS)]  # a timeout: finite, positive
Cpus = Annotated[float, Field(gt=0, le=4096)]
MegaBytes = Annotated[int, Field(gt=0, le=1 << 30)]


def _task_cwd(v: str) -> str:
    """An absolute, plain path: every backend can make it (a container's workdir, a folder bound by bwrap
    or mapped on the host); `..`, control characters or the root itself cannot be."""
    if not v.startswith("/"):
        raise ValueError(f"{v!r} is not an absolute path (e.g. /testbed)")
    if any(unicodedata.category(c) == "Cc" for c in v):
        raise ValueError(f"{v!r} holds a control character")
    parts = v.strip("/").split("/")
    if any(p in (".", "..") for p in parts) or "" in parts[:-1]:
        raise ValueError(f"{v!r} is not a plain path (no '.', '..' or '//' parts)")
    if v.strip("/") == "":
        raise ValueError("the file system's root cannot be the task's working directory")
    return posixpath.normpath(v)


TaskCwd = Annotated[str, AfterValidator(_task_cwd)]


def resolved_folder(path: str | Path) -> Path:
    """The absolute form of a folder's path, links resolved; a symbolic link loop (or a name the system
    refuses) is a ValueError saying so, not a traceback."""
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError, ValueError) as e:  # RuntimeError: a link loop, before Python 3.13
        why = "a symbolic link loop" if isinstance(e, RuntimeError) else (getattr(e, "strerror", None) or str(e))
        raise ValueError(f"{path}: cannot be used as a folder ({why})") from None


def http_url_problem(url: object) -> str | None:
    """Why `url` cannot be an HTTP endpoint's base URL, or None."""
    if not isinstance(url, str):
        return f"expected a URL string, got {type(url).__name__}"
    shown = repr(url) if "@" not in url else "the URL"  # (credentials in it stay out of the message)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError as e:
        return f"{shown} is not a URL ({e})"
    if parts.scheme not in ("http", "https"):
        return f"{shown} is not an http:// or https:// URL"
    if not parts.hostname:
        return f"{shown} names no host"
    return None
