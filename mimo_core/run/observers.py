"""Plug-ins that observe a CLI run (the Dagster code location registers one): every `mimoagent.observers`
entry point (`mimo_core/plugins.py`'s observer plug-ins), each built from the run's request.

The CLI stays free of Dagster: an observer is built from the run's `RunRequest`, is told the plan, receives
each finished record from worker threads (it must only queue it), and is flushed at the end.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Protocol

from mimo_core import plugins
from mimo_core.records.results import ResultRecord

if TYPE_CHECKING:
    from mimo_core.run.plan import RunPlan, RunRequest

GROUP = plugins.KINDS["observers"].group


class RunObserver(Protocol):
    def start(self, plan: RunPlan) -> None: ...

    def record(self, record: ResultRecord) -> None: ...

    def finish(self) -> None: ...


def load_observers(request: RunRequest) -> list[RunObserver]:
    from mimo_core.settings import observer_enabled

    observers: list[RunObserver] = []
    for plugin in plugins.installed("observers"):
        if not observer_enabled(plugin.name):
            continue
        try:
            observers.append(plugins.load(plugin)(request))
        except Exception as e:  # a broken observer must not stop the rollouts
            print(f"mimoagent: observer {plugin.name!r} disabled: {type(e).__name__}: {e}", file=sys.stderr)
    return observers
