"""Headless Chromium for UI tests: installed from Debian when missing, one fresh profile per call.

Plain `--dump-dom` / `--screenshot` with a virtual-time budget is enough for a single-page app that
renders after its GraphQL fetches; no driver or CDP client needed.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from testkit.host_packages import ensure_apt

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]


def ensure_chromium() -> str:
    """The chromium binary, installed from Debian once if it is not there."""
    found = ensure_apt("chromium", "chromium")
    if not found:
        raise RuntimeError("chromium is not installed and apt-get could not install it")
    return found


def _run(url: str, extra: list[str], budget_ms: int, window: str, timeout: float) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="mimo-chromium-") as profile:
        return subprocess.run(
            [
                ensure_chromium(),
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={window}",
                f"--virtual-time-budget={budget_ms}",
                *extra,
                url,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
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
