"""Plug-ins that observe a CLI run (the Dagster code location registers one), found by entry point.

The CLI stays free of Dagster: an observer is built from the run's `RunRequest`, is told the plan, receives
each finished record from worker threads (it must only queue it), and is flushed at the end.
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Protocol

from mimo_core.results import ResultRecord

if TYPE_CHECKING:
    from mimo_core.plan import RunPlan, RunRequest

GROUP = "mimoagent.observers"


class RunObserver(Protocol):
    def start(self, plan: RunPlan) -> None: ...

    def record(self, record: ResultRecord) -> None: ...

    def finish(self) -> None: ...


def _disabled(name: str) -> bool:
    """`MIMOAGENT_<NAME>=0` turns one observer off; `MIMOAGENT_OBSERVERS=0` turns all off."""
    off = ("0", "false", "no", "off")
    return (os.environ.get("MIMOAGENT_OBSERVERS", "1").lower() in off
            or os.environ.get(f"MIMOAGENT_{name.upper()}", "1").lower() in off)


def load_observers(request: RunRequest) -> list[RunObserver]:
    observers: list[RunObserver] = []
    for ep in entry_points(group=GROUP):
        if _disabled(ep.name):
            continue
        try:
            observers.append(ep.load()(request))
        except Exception as e:  # a broken observer must not stop the rollouts
            print(f"mimoagent: observer {ep.name!r} disabled: {type(e).__name__}: {e}", file=sys.stderr)
    return observers
