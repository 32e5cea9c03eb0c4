"""Per-test outcomes from a verifier's own reports, summarised for f2p and p2p separately.

Verifiers write a CTRF report (`ctrf.json`: `results.tests[]` with `name` and `status`) and/or put
per-test results in `reward.json` (`"f2p": {"test id": true, ...}`). The task's `tests/config.json`
(`f2p_node_ids`, `p2p_node_ids`) says which test is which; a listed test absent from every report is
`missing` (it crashed the run or was never collected).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

PASSED, FAILED, ERRORED, MISSING = "passed", "failed", "errored", "missing"
_STATUS = {
    "passed": PASSED,
    "pass": PASSED,
    "ok": PASSED,
    "success": PASSED,
    "xfail": PASSED,
    "failed": FAILED,
    "fail": FAILED,
    "failure": FAILED,
}


class OutcomeGroup(BaseModel):
    """The test ids of one group (f2p, p2p, or the report's other tests) by outcome."""

    passed: list[str] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)
    errored: list[str] = Field(default_factory=list)  # skipped, pending, error, other: did not run to a verdict
    missing: list[str] = Field(default_factory=list)


class OutcomeSummary(BaseModel):
    source: list[str] = Field(default_factory=list)  # the reports it was read from
    f2p: OutcomeGroup = Field(default_factory=OutcomeGroup)
    p2p: OutcomeGroup = Field(default_factory=OutcomeGroup)
    other: OutcomeGroup = Field(default_factory=OutcomeGroup)  # reported tests listed in neither group


def _status(value: Any) -> str:
    if isinstance(value, bool):
        return PASSED if value else FAILED
    if isinstance(value, dict):
        value = value.get("status", value.get("outcome"))
    return _STATUS.get(str(value).strip().lower(), ERRORED)


# DeepSWE's grader lists a test absent from the runner's reports as `failed` with the message "missing
# from report (test did not run or produced no result ...)": it is missing, not failed.
_MISSING_MESSAGE = re.compile(r"\b(missing|not found|absent) (from|in) (the )?(test )?reports?\b", re.I)


def ctrf_outcomes(report: Any) -> dict[str, str]:
    """test name → passed | failed | errored | missing, from a CTRF document."""
    tests = (report.get("results") or {}).get("tests") if isinstance(report, dict) else None
    out: dict[str, str] = {}
    for t in tests if isinstance(tests, list) else []:
        if isinstance(t, dict) and t.get("name") is not None:
            status = _status(t.get("status"))
            if status != PASSED and _MISSING_MESSAGE.search(str(t.get("message") or "")):
                status = MISSING
            out[str(t["name"])] = status
    return out


def reward_outcomes(reward: Any) -> tuple[dict[str, str], dict[str, str]]:
    """(f2p, p2p) test → outcome, from the per-test maps some verifiers put in reward.json."""
    groups = []
    for key in ("f2p", "p2p"):
        value = reward.get(key) if isinstance(reward, dict) else None
        groups.append({str(k): _status(v) for k, v in value.items()} if isinstance(value, dict) else {})
    return groups[0], groups[1]


def _match(test_id: str, outcomes: dict[str, str]) -> str | None:
    """The report's name for a listed test. Runners spell ids differently (`file::Class::test`,
    `Class.test`, a bare name): an exact match first, then one ending with the other."""
    if test_id in outcomes:
        return test_id
    return next((name for name in outcomes if test_id.endswith(name) or name.endswith(test_id)), None)


def summarise(f2p_ids: list[str], p2p_ids: list[str], outcomes: dict[str, str], sources: list[str]) -> OutcomeSummary:
    summary = OutcomeSummary(source=sources)
    used: set[str] = set()
    for ids, group in ((f2p_ids, summary.f2p), (p2p_ids, summary.p2p)):
        for test_id in ids:
            name = _match(test_id, outcomes)
            getattr(group, MISSING if name is None else outcomes[name]).append(test_id)
            if name is not None:
                used.add(name)
    for name, status in outcomes.items():
        if name not in used:
            getattr(summary.other, status).append(name)
    return summary


def summarise_folder(folder: Path, test_config: Any) -> OutcomeSummary | None:
    """The summary for a copied verifier logs folder, or None when it holds no per-test report."""
    config = test_config if isinstance(test_config, dict) else {}
    f2p_ids = [str(t) for t in config.get("f2p_node_ids") or []]
    p2p_ids = [str(t) for t in config.get("p2p_node_ids") or []]
    outcomes: dict[str, str] = {}
    sources: list[str] = []
    for path in sorted(folder.rglob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError):
            continue
        rel = path.relative_to(folder).as_posix()
        found = ctrf_outcomes(data)
        if path.name == "reward.json":
            f2p, p2p = reward_outcomes(data)
            found = {**f2p, **p2p, **found}
            f2p_ids = f2p_ids or list(f2p)
            p2p_ids = p2p_ids or list(p2p)
        if found:
            sources.append(rel)
            for name, status in found.items():
                outcomes.setdefault(name, status)
    if not sources:
        return None
    return summarise(f2p_ids, p2p_ids, outcomes, sources)
