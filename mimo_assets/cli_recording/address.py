"""Where a CLI run finds the recorder for its Dagster home, how it proves it may use it, and how long a
recorder stays warm.

One recorder process serves every CLI run that would record the same way: the same Dagster home, the same
`MIMOAGENT_*`/`DAGSTER_*`/`PG*` settings, the same interpreter and the same code (the modification times
of this project's sources and of the installed packages). Anything else gets a recorder of its own, so a
recorder never records with settings or code its client did not have. The address is a Linux abstract
socket: no file to clean up after a crash, no path length limit, gone with the process. Any process
in the host's network namespace can connect to it, so a connection is served only when its first line
holds the home's token (`.mimoagent-recorder.token`, mode 0600 in the Dagster home, made on first use):
a sandbox never has the home in its view, and another user cannot read it (the recorder checks the
peer's uid too).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sys
import sysconfig
from pathlib import Path

from mimo_core.settings import PREFIX, RecordingSettings

IDLE_ENV = RecordingSettings.variable("recorder_idle_s")
_PREFIX = "mimoagent-recorder-"
_SOURCES = ("mimo_assets", "mimo_core", "resources")
_SETTINGS = (PREFIX, "DAGSTER_", "PG")


def idle_seconds() -> float:
    """Seconds a recorder waits for the next CLI run once idle ($MIMOAGENT_DAGSTER_RECORDER_IDLE, default
    120: a user's next run from the same shell usually comes within minutes; 0: it exits when its run is
    recorded, so nothing of it outlives the CLI run by more than the recording)."""
    return RecordingSettings.read().recorder_idle_s


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


TOKEN_FILE = ".mimoagent-recorder.token"
TOKEN_LINE = "mimoagent-token"


def token(home: Path) -> str:
    """The home's recorder token, made on first use: mode 0600 from the start, put in place with a link so
    two processes making it at once agree on one."""
    path = home / TOKEN_FILE
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    tmp = home / f".{TOKEN_FILE}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (secrets.token_hex(32) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another process made it first: theirs is the token
    finally:
        tmp.unlink()
    return path.read_text().strip()


def token_line(home: Path) -> str:
    return f"{TOKEN_LINE} {token(home)}"


def valid_token_line(line: str, expected: str) -> bool:
    words = line.split()
    return len(words) == 2 and words[0] == TOKEN_LINE and hmac.compare_digest(words[1], expected)
