"""Where a CLI run finds the recorder for its Dagster home, and how long a recorder stays warm.

One recorder process serves every CLI run that would record the same way: the same Dagster home, the same
`MIMOAGENT_*`/`DAGSTER_*`/`PG*` settings, the same interpreter and the same code (the modification times
of this project's sources and of the installed packages). Anything else gets a recorder of its own, so a
recorder never records with settings or code its client did not have. The address is a Linux abstract
socket: no file to clean up after a crash, no path length limit, gone with the process.
"""

from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
from pathlib import Path

IDLE_ENV = "MIMOAGENT_DAGSTER_RECORDER_IDLE"
DEFAULT_IDLE_S = 120.0  # a user's next run from the same shell usually comes within minutes
_PREFIX = "mimoagent-recorder-"
_SOURCES = ("mimo_assets", "mimo_core", "resources")
_SETTINGS = ("MIMOAGENT_", "DAGSTER_", "PG")


def idle_seconds() -> float:
    """Seconds a recorder waits for the next CLI run once idle ($MIMOAGENT_DAGSTER_RECORDER_IDLE; 0: it
    exits when its run is recorded, so nothing of it outlives the CLI run by more than the recording)."""
    raw = os.environ.get(IDLE_ENV, "").strip()
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_IDLE_S
    except ValueError:
        return DEFAULT_IDLE_S


def _code_fingerprint() -> list[str]:
    root = Path(__file__).resolve().parents[2]
    parts = []
    for name in _SOURCES:
        for folder, dirs, files in os.walk(root / name):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for f in files:
                if f.endswith(".py"):
                    st = os.stat(os.path.join(folder, f))
                    parts.append(f"{folder}/{f}:{st.st_mtime_ns}:{st.st_size}")
    parts.append(f"packages:{os.stat(sysconfig.get_paths()['purelib']).st_mtime_ns}")
    return sorted(parts)


def recorder_name(home: Path) -> str:
    """The abstract socket name (without its leading NUL) of the recorder for this process's settings."""
    digest = hashlib.sha256()
    settings = sorted((k, v) for k, v in os.environ.items() if k.startswith(_SETTINGS))
    for part in [str(home), sys.executable, *(f"{k}={v}" for k, v in settings), *_code_fingerprint()]:
        digest.update(part.encode(errors="replace") + b"\0")
    return _PREFIX + digest.hexdigest()[:32]


def socket_address(name: str) -> str:
    return "\0" + name
