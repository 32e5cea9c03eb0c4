"""The end-of-run table per config, and the live progress line. Plain Python: no polars import at start."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, Field

from mimo_core.results import ResultRecord


class ConfigSummary(BaseModel):
    config: str
    instances: int = 0
    rollouts: int = 0
    passed: int = 0
    graded: int = 0
    errors: dict[str, int] = Field(default_factory=dict)
    mean_steps: float = 0.0
    tokens: int = 0
    cost: float = 0.0

    @property
    def pass_rate(self) -> float:
        return self.passed / self.rollouts if self.rollouts else 0.0


def summarize(records: Iterable[ResultRecord]) -> list[ConfigSummary]:
    groups: dict[str, list[ResultRecord]] = defaultdict(list)
    for r in records:
        groups[r.config_name].append(r)
    out = []
    for name, recs in sorted(groups.items()):
        errors = Counter(r.error_class for r in recs if r.error_class)
        out.append(ConfigSummary(
            config=name, instances=len({r.instance_id for r in recs}), rollouts=len(recs),
            passed=sum(1 for r in recs if r.passed), graded=sum(1 for r in recs if r.reward is not None),
            errors=dict(errors), mean_steps=sum(r.steps for r in recs) / len(recs),
            tokens=sum(r.prompt_tokens + r.completion_tokens for r in recs), cost=sum(r.cost for r in recs),
        ))
    return out


def render_table(summaries: list[ConfigSummary]) -> str:
    """A fixed-width text table: readable in a terminal, in CI logs and in a pasted issue."""
    head = ["config", "instances", "rollouts", "passed", "pass rate", "errors", "mean steps", "tokens", "cost $"]
    rows = [[
        s.config, str(s.instances), str(s.rollouts), str(s.passed), f"{s.pass_rate:.1%}",
        ", ".join(f"{k}={v}" for k, v in sorted(s.errors.items())) or "-", f"{s.mean_steps:.1f}",
        f"{s.tokens:,}", f"{s.cost:.4f}",
    ] for s in summaries]
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
        self.errors += bool(r.error_class)
        self.cost += r.cost

    def line(self) -> str:
        return (f"{self.done}/{self.total} done · {self.passed} passed · {self.errors} errors · "
                f"${self.cost:.4f}")
