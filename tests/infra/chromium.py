"""Headless Chromium for UI tests: installed from Debian when missing, one fresh profile per call.

Plain `--dump-dom` / `--screenshot` with a virtual-time budget is enough for a single-page app that
renders after its GraphQL fetches; no driver or CDP client needed.
"""

from __future__ import annotations

import fcntl
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]
LOCK = Path("/tmp/mimo-chromium-install.lock")


def ensure_chromium() -> str:
    """The chromium binary; `apt-get install chromium` once (under a lock) if it is not there."""
    found = shutil.which("chromium")
    if found:
        return found
    with open(LOCK, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        if not shutil.which("chromium"):
            env = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
            if subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], env=env, capture_output=True).returncode:
                subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, check=True)
                subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], env=env, capture_output=True,
                               check=True)
    found = shutil.which("chromium")
    if not found:
        raise RuntimeError("chromium is not installed and apt-get could not install it")
    return found


def _run(url: str, extra: list[str], budget_ms: int, window: str, timeout: float) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="mimo-chromium-") as profile:
        return subprocess.run(
            [ensure_chromium(), *FLAGS, f"--user-data-dir={profile}", f"--window-size={window}",
             f"--virtual-time-budget={budget_ms}", *extra, url],
            capture_output=True, text=True, timeout=timeout,
        )


def dump_dom(url: str, budget_ms: int = 20000, window: str = "1600,1000", timeout: float = 90) -> str:
    return _run(url, ["--dump-dom"], budget_ms, window, timeout).stdout


def screenshot(url: str, path: Path, budget_ms: int = 20000, window: str = "1600,1000", timeout: float = 90) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = _run(url, [f"--screenshot={path}"], budget_ms, window, timeout)
    if not path.exists():
        raise RuntimeError(f"chromium wrote no screenshot of {url}: {proc.stderr[-2000:]}")
    return path


def visible_text(html: str) -> str:
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
