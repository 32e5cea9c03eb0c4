"""Per-test outcomes from a test run: pytest's `-rA` summary, or one exit code per test.

Only the runner's own summary counts: the last `short test summary info` section, up to pytest's final
stats line (`=== 1 failed, 2 passed in 0.12s ===`). Text after that line (printed at exit by the code
under test) is ignored, and result lines there are a conflict; the first result line per test id wins; a
second summary header, a second line that gives one id another status, or stats that disagree with the
result lines are conflicts, which the dataset type records as a forged verdict."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PYTEST_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)\s+(\S.*)$")
_HEADER = re.compile(r"^=+ short test summary info =+$")
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)\b")
# pytest's last line: `=== 1 failed, 2 passed, 1 warning in 0.12s (0:00:00) ===`, `no tests ran in 0.01s`,
# old versions' `in 0.12 seconds`, `-q`'s bare `2 passed in 0.01s`.
_FINAL = re.compile(
    r"^(?:=+ )?(?P<stats>(?:\d+ \w+(?:, \d+ \w+)*|no tests ran)) in \d+(?:\.\d+)? ?s(?:econds)?"
    r"(?: \([^)]*\))?(?: =+)?$"
)
_STARTS = re.compile(r"^=+ test session starts =+$")
PASSING = {"PASSED", "XFAIL"}
# the stats word → the result-line status it counts
_LINE_OF = {
    "passed": "PASSED",
    "failed": "FAILED",
    "error": "ERROR",
    "errors": "ERROR",
    "xfailed": "XFAIL",
    "xpassed": "XPASS",
}


class PytestReport(BaseModel):
    """What pytest's own summary says, and what in it contradicts itself."""

    statuses: dict[str, str] = Field(default_factory=dict)  # test id → PASSED | FAILED | ERROR | XFAIL | XPASS
    conflicts: list[str] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)  # from the final stats line: passed, failed, error, ...
    final_line: str | None = None  # None: pytest never finished its summary (crashed, killed, os._exit)
    lines: dict[str, int] = Field(default_factory=dict)  # result lines per status in the summary section
    started: bool = False  # pytest's `test session starts` header was printed

    @property
    def all_passing(self) -> bool:
        """Every result in the summary passes and the stats name no failure or error."""
        return (
            bool(self.statuses)
            and all(s in PASSING | {"SKIPPED"} for s in self.statuses.values())
            and not self.counts.get("failed")
            and not self.counts.get("error")
        )

    @property
    def any_failing(self) -> bool:
        return any(s in ("FAILED", "ERROR") for s in self.statuses.values()) or bool(
            self.counts.get("failed") or self.counts.get("error")
        )


def _test_id(rest: str) -> str:
    """The id at the start of a result line's rest: up to the first blank outside brackets (a parameter
    may hold spaces and ` - `; the message after ` - ` never counts)."""
    depth = 0
    for i, ch in enumerate(rest):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(depth - 1, 0)
        elif ch.isspace() and depth == 0:
            return rest[:i]
    return rest


def _counts(stats: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n, word in _COUNT.findall(stats):
        key = {"errors": "error", "warnings": "warning"}.get(word, word)
        counts[key] = counts.get(key, 0) + int(n)
    return counts


def read_pytest(output: str) -> PytestReport:
    """The report of the runner's own summary section in `output` (see the module's doc)."""
    lines = [_ANSI.sub("", line).strip() for line in output.splitlines()]
    report = PytestReport(started=any(_STARTS.match(line) for line in lines))
    found = next(((i, m) for i in range(len(lines) - 1, -1, -1) if (m := _FINAL.match(lines[i]))), None)
    if found is None:
        return report
    final, final_match = found
    report.final_line = lines[final]
    after = sum(1 for line in lines[final + 1 :] if _PYTEST_LINE.match(line) or _HEADER.match(line))
    if after:  # pytest prints nothing of its summary after its last line: someone else printed these
        report.conflicts.append(f"{after} result line(s) printed after pytest's final line")
    report.counts = _counts(final_match.group("stats"))
    headers = [i for i in range(final) if _HEADER.match(lines[i])]
    if len(headers) > 1:
        report.conflicts.append(f"{len(headers)} 'short test summary info' sections in one run")
    if not headers:
        return report
    for line in lines[headers[-1] + 1 : final]:
        m = _PYTEST_LINE.match(line)
        if not m:
            continue
        status, test = m.group(1), _test_id(m.group(2).strip())
        report.lines[status] = report.lines.get(status, 0) + 1
        if status == "SKIPPED":  # `SKIPPED [2] file.py:3: reason`: a location, not a test id
            continue
        seen = report.statuses.get(test)
        if seen is None:
            report.statuses[test] = status
        elif status == "ERROR" and seen != "ERROR":
            report.statuses[test] = status  # pytest's own second line: an error in the test's teardown
        elif status != seen:
            report.conflicts.append(f"{test} is reported {seen} and then {status}")
    for word, status in _LINE_OF.items():
        if word == "errors":
            continue
        stated, listed = report.counts.get(word, 0), report.lines.get(status, 0)
        # a kind the summary does not list at all was not asked for (`-r` chars), except failures and errors,
        # which every summary pytest prints lists
        if stated != listed and (listed or status in ("FAILED", "ERROR")):
            report.conflicts.append(f"the final line says {stated} {word}, the summary lists {listed} {status} line(s)")
    return report


def contradictions(report: PytestReport, exit_code: int) -> list[str]:
    """What the summary and pytest's exit status say against each other (all of it a forged verdict)."""
    found = list(report.conflicts)
    if exit_code == 1 and report.all_passing:
        found.append("every reported test passed, but pytest exited 1 (tests failed)")
    if exit_code == 0 and report.any_failing:
        found.append("the summary reports failures or errors, but pytest exited 0")
    if exit_code == 0 and report.final_line is None and report.started:
        found.append("pytest exited 0 without printing its final line (its run was cut short)")
    return found


def parse_pytest(output: str) -> dict[str, str]:
    """test id → status, from the short summary that `pytest -rA` prints (see `read_pytest`)."""
    return read_pytest(output).statuses


def passed(status: dict[str, str], test: str) -> bool:
    """A test missing from the report did not pass (it crashed the run or was never collected)."""
    return status.get(test) in PASSING
