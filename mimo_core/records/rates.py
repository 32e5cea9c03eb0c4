"""The one definition of each rate, and its name wherever it is shown (docs/dagster.md#the-rates).

Every rollout a table counts is **attempted**. One that ended in an infrastructure error
(`mimo_core.status.INFRA_STATUSES`: the sandbox, the model endpoint or the verifier failed, never the
model's 0) is one of the **errors**; every other rollout is **graded** (a config or dataset error, a step
limit, an ungraded submission: graded, and failed). A rollout **passed** only when the verifier said so.

- **pass rate (of graded)** = passed / graded: what the agent achieved where the machinery worked; the
  Dagster tables' rate, with its Wilson interval, and the one A/B comparisons use.
- **pass rate (of attempted)** = passed / attempted: infrastructure errors count as failures.

The CLI's end-of-run table, the viewer's summary and the Dagster tables and plots all take these
functions and these labels. Plain Python: no polars, no Dagster.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mimo_core.records.results import ResultRecord

# identifier (a column, a field) → the label shown for it
ATTEMPTED = "attempted"
ERRORS = "errors"
GRADED = "graded"
PASSED = "passed"
PASS_RATE_OF_GRADED = "pass_rate_of_graded"
PASS_RATE_OF_ATTEMPTED = "pass_rate_of_attempted"
LABELS = {
    ATTEMPTED: "attempted",
    ERRORS: "errors",
    GRADED: "graded",
    PASSED: "passed",
    PASS_RATE_OF_GRADED: "pass rate (of graded)",
    PASS_RATE_OF_ATTEMPTED: "pass rate (of attempted)",
}
DEFINITIONS = {
    ATTEMPTED: "every rollout counted",
    ERRORS: "rollouts that ended in an infrastructure error (never a result; redone on resume)",
    GRADED: "attempted − errors",
    PASSED: "rollouts the verifier passed",
    PASS_RATE_OF_GRADED: "passed / graded",
    PASS_RATE_OF_ATTEMPTED: "passed / attempted (infrastructure errors count as failures)",
}


def rate(passed: int, n: int) -> float | None:
    """passed / n, or None when there is nothing to divide by (never a 0 % made of no data)."""
    return passed / n if n else None


@dataclass(frozen=True)
class Counts:
    """The counts behind both rates."""

    attempted: int = 0
    errors: int = 0
    passed: int = 0

    @property
    def graded(self) -> int:
        return self.attempted - self.errors

    @property
    def pass_rate_of_graded(self) -> float | None:
        return rate(self.passed, self.graded)

    @property
    def pass_rate_of_attempted(self) -> float | None:
        return rate(self.passed, self.attempted)

    def as_dict(self) -> dict[str, int | float | None]:
        """Keyed by identifier, in the order they are shown."""
        return {
            ATTEMPTED: self.attempted,
            ERRORS: self.errors,
            GRADED: self.graded,
            PASSED: self.passed,
            PASS_RATE_OF_GRADED: self.pass_rate_of_graded,
            PASS_RATE_OF_ATTEMPTED: self.pass_rate_of_attempted,
        }


def counts(records: Iterable[ResultRecord]) -> Counts:
    attempted = errors = passed = 0
    for r in records:
        attempted += 1
        errors += r.infra_error
        passed += bool(r.passed) and not r.infra_error
    return Counts(attempted, errors, passed)


def percent(value: float | None) -> str:
    """A rate as shown in a text table: `69.0%`, or `-` when there is nothing to divide by."""
    return "-" if value is None else f"{value:.1%}"
