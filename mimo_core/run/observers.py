"""Plug-ins that observe a CLI run (the Dagster code location registers one), found by entry point.

The CLI stays free of Dagster: an observer is built from the run's `RunRequest`, is told the plan, receives
each finished record from worker threads (it must only queue it), and is flushed at the end.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Protocol

from mimo_core.records.results import ResultRecord

if TYPE_CHECKING:
    from mimo_core.run.plan import RunPlan, RunRequest

GROUP = "mimoagent.observers"


class RunObserver(Protocol):
    def start(self, plan: RunPlan) -> None: ...

    def record(self, record: ResultRecord) -> None: ...

    def finish(self) -> None: ...


def load_observers(request: RunRequest) -> list[RunObserver]:
    from mimo_core.settings import observer_enabled

    observers: list[RunObserver] = []
    for ep in entry_points(group=GROUP):
        if not observer_enabled(ep.name):
            continue
        try:
            observers.append(ep.load()(request))
        except Exception as e:  # a broken observer must not stop the rollouts
            print(f"mimoagent: observer {ep.name!r} disabled: {type(e).__name__}: {e}", file=sys.stderr)
    return observers
