"""Helpers of the backend contract suite: processes seen from the host.

Every backend's processes run on this machine's kernel (local ones directly, bwrap's in a PID namespace,
docker's and the stand-in's pods as containers of the test dockerd), so one scan of the host's /proc
tells whether a sandbox's process is still alive, whatever the backend. Sleep lengths no other process
uses (`tag()`) pick out this test's processes among everything else running on the machine.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path


def tag() -> str:
    """Digits to put in a `sleep` argument that no other process on the machine carries."""
    return str(secrets.randbelow(9 * 10**6) + 10**6)


def host_processes(tagged: str) -> list[str]:
    """Command lines of the live (not zombie) host processes running `sleep <tagged>...`."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 1 and argv[0].endswith(b"sleep") and argv[1].startswith(tagged.encode()):
            found.append(b" ".join(argv).decode(errors="replace"))
    return found


def gone(tagged: str, within: float = 5.0) -> list[str]:
    """Wait until no process tagged so is alive; what is still alive after `within` seconds."""
    deadline = time.monotonic() + within
    while (alive := host_processes(tagged)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def running(tagged: str, count: int, within: float = 10.0) -> list[str]:
    """Wait until `count` processes tagged so are alive (a background job may not have exec'd yet)."""
    deadline = time.monotonic() + within
    while len(alive := host_processes(tagged)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive
