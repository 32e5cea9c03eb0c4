"""Per-test outcomes from a test run: pytest's `-rA` summary, or one exit code per test."""

from __future__ import annotations

import re

_PYTEST_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)\s+(\S.*?)(?:\s+-\s+.*)?$")
PASSING = {"PASSED", "XFAIL"}


def parse_pytest(output: str) -> dict[str, str]:
    """test id → status, from the short summary that `pytest -rA` prints."""
    status: dict[str, str] = {}
    for line in output.splitlines():
        m = _PYTEST_LINE.match(line.strip())
        if m:
            status[m.group(2).strip()] = m.group(1)
    return status


def passed(status: dict[str, str], test: str) -> bool:
    """A test missing from the report did not pass (it crashed the run or was never collected)."""
    return status.get(test) in PASSING
