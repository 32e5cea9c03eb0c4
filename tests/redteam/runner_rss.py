"""The runner's own peak RSS, read from its /proc status while it runs.

wait4's ru_maxrss is no use here: a child forked from pytest keeps pytest's resident size as its
high-water mark through exec (Linux records the old mm's peak at exec), so late in a full suite a 100 MB
runner reads as 600 MB. VmHWM belongs to the runner's own address space, made fresh at exec.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path


def _hwm_bytes(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0  # gone (or a zombie without an address space)
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def wait_with_peak_rss(proc: subprocess.Popen[bytes], timeout: float, poll: float = 0.02) -> tuple[int, int]:
    """Wait for `proc` (killed past `timeout` seconds); return (exit code, its peak RSS in bytes).

    VmHWM only grows, so the last reading before exit holds the peak unless the peak came in the last
    `poll` seconds of the run."""
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    peak = 0
    try:
        while True:
            peak = max(peak, _hwm_bytes(proc.pid))
            try:
                returncode = proc.wait(timeout=poll)
                break
            except subprocess.TimeoutExpired:
                continue
    finally:
        timer.cancel()
    return returncode, peak
