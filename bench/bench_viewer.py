"""`mimoagent view` on a generated 10,000-rollout output folder: time to first paint of the run page and
of a 250-step rollout page, read from headless Chromium's own paint timing over the DevTools protocol.

    uv run python -m bench.bench_viewer [--rollouts 10000] [--steps 250] [--repeat 5]

Each page is loaded `--repeat` times in one browser (a fresh navigation each time, no cache reuse of the
HTML: the viewer sends no cache headers); the figures are medians. First paint = Chromium's
`firstContentfulPaint` lifecycle event, from the moment the navigation was asked for: it includes the
server's work. *response*, *DOM ready*, *load* are the page's own navigation timing (from its time origin).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from testkit.cdp import Browser
from testkit.output_folders import write_output_folder

TIMING_JS = """JSON.stringify({
  response: performance.getEntriesByType('navigation')[0].responseEnd,
  dom: performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd,
  load: performance.getEntriesByType('navigation')[0].loadEventEnd,
  bytes: performance.getEntriesByType('navigation')[0].transferSize,
  rows: document.querySelectorAll('tr.rollout, div.msg').length})"""


def measure(browser: Browser, url: str) -> dict[str, Any]:
    times = browser.load(url, paint=True)
    timing = json.loads(browser.evaluate(TIMING_JS))
    timing["fcp"] = times["firstContentfulPaint"]
    return timing


def start_viewer(out: Path) -> tuple[subprocess.Popen, str, float]:
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mimo_core.cli", "view", str(out)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(120)
    if not line or " at " not in line[0]:
        raise RuntimeError("the viewer did not start")
    return proc, line[0].split(" at ", 1)[1].split()[0], time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rollouts", type=int, default=10_000)
    ap.add_argument("--steps", type=int, default=250, help="steps of the long rollout")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mimo-bench-viewer-") as tmp:
        out = Path(tmp) / "out"
        t0 = time.monotonic()
        write_output_folder(out, args.rollouts, long_steps=args.steps)
        print(f"generated {args.rollouts} rollouts (one of {args.steps} steps) in {time.monotonic() - t0:.1f} s")
        viewer, run_url, startup = start_viewer(out)
        base = run_url.split("/runs/", 1)[0]
        pages = {
            "run page (first 100 of all)": run_url,
            "run page, filtered + sorted": run_url + "?status=submitted&sort=reward&desc=1&page=3",
            f"rollout page ({args.steps} steps)": run_url + "r/inst-00000/a/0",
            "A/B instance page": base + "/instance?id=inst-00000",
        }
        rows = []
        try:
            with Browser() as browser:
                for name, url in pages.items():
                    samples = [measure(browser, url) for _ in range(args.repeat)]
                    med = {k: statistics.median(s[k] for s in samples) for k in ("fcp", "response", "dom", "load")}
                    rows.append((name, med, samples[0]["bytes"], samples[0]["rows"], samples[0]["fcp"]))
        finally:
            os.killpg(viewer.pid, signal.SIGTERM)
            viewer.wait(timeout=20)
    load = os.getloadavg()[0]
    print(
        f"viewer start-up (read {args.rollouts} records, print the URL): {startup:.2f} s; "
        f"{os.cpu_count()} cores, load {load:.1f}; medians of {args.repeat} loads (ms from navigation start)"
    )
    print(
        f"{'page':34} {'first paint':>11} {'response':>9} {'DOM ready':>9} {'load':>7} {'1st load':>8} "
        f"{'KB':>6} {'items':>6}"
    )
    for name, med, size, items, first in rows:
        print(
            f"{name:34} {med['fcp']:11.0f} {med['response']:9.0f} {med['dom']:9.0f} {med['load']:7.0f} "
            f"{first:8.0f} {size / 1024:6.0f} {items:6d}"
        )


if __name__ == "__main__":
    main()
