"""Debian packages the real-backend tests need (bubblewrap, chromium, docker.io, debootstrap), installed
on first use when missing, so `uv run pytest` works on a fresh machine with nothing set up by hand."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

LOCK = Path("/tmp/mimo-apt.lock")
_APT_ENV = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}


def ensure_apt(binary: str, *packages: str) -> str | None:
    """The path of `binary`, installing `packages` with apt-get first if it is missing. None where we
    cannot install (not root, no apt-get, or the install failed): callers skip with that reason."""
    found = shutil.which(binary)
    if found or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return found
    with open(LOCK, "w") as fh:  # one apt-get at a time across pytest processes
        fcntl.flock(fh, fcntl.LOCK_EX)
        if not shutil.which(binary):
            cmd = ["apt-get", "install", "-y", "-q", *packages]
            if subprocess.run(cmd, env=_APT_ENV, capture_output=True).returncode:
                subprocess.run(["apt-get", "update", "-q"], env=_APT_ENV, capture_output=True)
                subprocess.run(cmd, env=_APT_ENV, capture_output=True)
    return shutil.which(binary)
