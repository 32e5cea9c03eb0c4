"""The end-of-run table per config, and the live progress line. Plain Python: no polars import at start."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, Field

from mimo_core.records import rates
from mimo_core.records.results import ResultRecord


class ConfigSummary(BaseModel):
    """One config's row of the end-of-run table; its rates are mimo_core.records.rates' (the Dagster tables' too)."""

    config: str
    instances: int = 0
    rollouts: int = 0  # attempted
    passed: int = 0
    errors: int = 0  # infrastructure errors (rates.ERRORS)
    error_classes: dict[str, int] = Field(default_factory=dict)  # every error class, infrastructure or not
    mean_steps: float = 0.0
    tokens: int = 0
    cost: float = 0.0

    @property
    def counts(self) -> rates.Counts:
        return rates.Counts(attempted=self.rollouts, errors=self.errors, passed=self.passed)

    @property
    def graded(self) -> int:
        return self.counts.graded

    @property
    def pass_rate_of_graded(self) -> float | None:
        return self.counts.pass_rate_of_graded

    @property
    def pass_rate_of_attempted(self) -> float | None:
        return self.counts.pass_rate_of_attempted


def summarize(records: Iterable[ResultRecord]) -> list[ConfigSummary]:
    groups: dict[str, list[ResultRecord]] = defaultdict(list)
    for r in records:
        groups[r.config_name].append(r)
    out = []
    for name, recs in sorted(groups.items()):
        c = rates.counts(recs)
        out.append(
            ConfigSummary(
                config=name,
                instances=len({r.instance_id for r in recs}),
                rollouts=c.attempted,
                passed=c.passed,
                errors=c.errors,
                error_classes=dict(Counter(str(r.error_class) for r in recs if r.error_class)),
                mean_steps=sum(r.steps for r in recs) / len(recs),
                tokens=sum(r.prompt_tokens + r.completion_tokens for r in recs),
                cost=sum(r.cost for r in recs),
            )
        )
    return out


COLUMNS = [
    "config",
    "instances",
    rates.LABELS[rates.ATTEMPTED],
    rates.LABELS[rates.ERRORS],
    rates.LABELS[rates.GRADED],
    rates.LABELS[rates.PASSED],
    rates.LABELS[rates.PASS_RATE_OF_GRADED],
    rates.LABELS[rates.PASS_RATE_OF_ATTEMPTED],
    "error classes",
    "mean steps",
    "tokens",
    "cost $",
]


def table_rows(summaries: list[ConfigSummary]) -> list[list[str]]:
    """The table's cells, under COLUMNS."""
    return [
        [
            s.config,
            str(s.instances),
            str(s.rollouts),
            str(s.errors),
            str(s.graded),
            str(s.passed),
            rates.percent(s.pass_rate_of_graded),
            rates.percent(s.pass_rate_of_attempted),
            ", ".join(f"{k}={v}" for k, v in sorted(s.error_classes.items())) or "-",
            f"{s.mean_steps:.1f}",
            f"{s.tokens:,}",
            f"{s.cost:.4f}",
        ]
        for s in summaries
    ]


def render_table(summaries: list[ConfigSummary]) -> str:
    """A fixed-width text table: readable in a terminal, in CI logs and in a pasted issue. The rates are
    named as everywhere else (mimo_core.records.rates): errors are infrastructure errors,
    graded = attempted − errors."""
    head, rows = COLUMNS, table_rows(summaries)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in rows]
    return "\n".join(lines)


class Tally:
    """Counts for the live progress line: done / passed / errors / cost."""

    def __init__(self, total: int):
        self.total = total
        self.done = self.passed = self.errors = 0
        self.cost = 0.0

    def add(self, r: ResultRecord) -> None:
        self.done += 1
        self.passed += bool(r.passed)
        self.errors += r.infra_error  # rates.ERRORS: infrastructure errors
        self.cost += r.cost

    def line(self) -> str:
        head = f"{self.done}/{self.total} done · {self.passed} passed · {self.errors} errors · ${self.cost:.4f}"
        return " · ".join([head, *endpoint_lines()])


def endpoint_lines() -> list[str]:
    """Per endpoint this process called: requests in flight / the limit (adaptive or set), calls waiting
    now, calls that waited, overload answers (429/503/529): why a run is slow (models/endpoint_budget.py)."""
    from mimo_core.models.endpoint_budget import budgets

    out = []
    for b in budgets():
        s = b.snapshot()
        if not s["calls"]:
            continue
        limit = f"{s['limit']}{' adaptive' if s['adaptive'] else ''}"
        out.append(
            f"{s['endpoint']}: {s['in_flight']}/{limit} in flight, {s['waiting']} waiting, "
            f"{s['waits']} waited ({s['wait_s']:.0f}s), {s['overloads']} overloaded"
        )
    return out


def run_total(summaries: list[ConfigSummary]) -> str:
    """The run's sums under the table: every config's rollouts, tokens and cost."""
    rollouts = sum(s.rollouts for s in summaries)
    tokens = sum(s.tokens for s in summaries)
    cost = sum(s.cost for s in summaries)
    return f"run total: {rollouts} rollouts · {tokens:,} tokens · cost ${cost:.4f}"
