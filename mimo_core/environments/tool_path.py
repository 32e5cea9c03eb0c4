"""The PATH commands get: the host's, minus mimoagent's own virtualenv.

`uv run mimoagent` puts the project's .venv/bin first on PATH; a tool command would then run our
python, pip and pytest instead of the task's, and could install into our environment.
"""

from __future__ import annotations

import os
import sys

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def own_venv_bins() -> set[str]:
    bins = set()
    if sys.prefix != sys.base_prefix:
        bins.add(os.path.join(sys.prefix, "bin"))
    venv = os.environ.get("VIRTUAL_ENV")
    if venv:
        bins.add(os.path.join(venv, "bin"))
    return {os.path.realpath(b) for b in bins}


def tool_path(path: str | None) -> str:
    """`path` without the entries that point into mimoagent's virtualenv (the default PATH if nothing is left)."""
    drop = own_venv_bins()
    kept = [p for p in (path or "").split(os.pathsep) if p and os.path.realpath(p) not in drop]
    return os.pathsep.join(kept) or DEFAULT_PATH
