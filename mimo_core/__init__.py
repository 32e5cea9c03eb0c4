"""mimoagent core library: configs, models, tools, agents, environments, datasets, grading, rollouts.

Never imports dagster; the Dagster code location lives in `mimo_assets`. The names below are the public
API (docs/library.md). They are loaded on first use, so `import mimo_core` (and every `mimoagent`
start, which imports this package first) costs nothing until one is touched.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mimo_core.version import __version__

# name -> the module that defines it
_EXPORTS = {
    # compose: a config, a dataset row (with its dataset type), a backend and an agent (config blocks)
    "make_config": "mimo_core.api",
    "load_config": "mimo_core.config_checks",  # a YAML file, checked as the CLI checks it
    "make_task": "mimo_core.api",
    "load_tasks": "mimo_core.datasets.loader",
    # run: one rollout, or a planned batch with resume and A/B assignment on a worker pool
    "run_rollout": "mimo_core.api",
    "RunRequest": "mimo_core.run.plan",
    "plan_run": "mimo_core.run.plan",
    "run_jobs": "mimo_core.run.batch",
    # read what a rollout wrote
    "ResultsStore": "mimo_core.records.results",
    "read_trajectory": "mimo_core.records.trajectory",
    "iter_steps": "mimo_core.records.model_calls",
    # the types these take and return
    "NamedConfig": "mimo_core.config",
    "Task": "mimo_core.datasets.base",
    "ResultRecord": "mimo_core.records.results",
    "Trajectory": "mimo_core.records.trajectory",
    "ExitStatus": "mimo_core.status",
}
_ALIASES: dict[str, str] = {}  # a public name -> its name in the module, where the two differ

__all__ = [  # the names of _EXPORTS (tests/package/test_public_api.py keeps them equal)
    "ExitStatus",
    "NamedConfig",
    "ResultRecord",
    "ResultsStore",
    "RunRequest",
    "Task",
    "Trajectory",
    "__version__",
    "iter_steps",
    "load_config",
    "load_tasks",
    "make_config",
    "make_task",
    "plan_run",
    "read_trajectory",
    "run_jobs",
    "run_rollout",
]

if TYPE_CHECKING:  # for type checkers and editors; at run time `__getattr__` loads them on first use
    from mimo_core.api import make_config, make_task, run_rollout
    from mimo_core.config import NamedConfig
    from mimo_core.config_checks import load_config
    from mimo_core.datasets.base import Task
    from mimo_core.datasets.loader import load_tasks
    from mimo_core.records.model_calls import iter_steps
    from mimo_core.records.results import ResultRecord, ResultsStore
    from mimo_core.records.trajectory import Trajectory, read_trajectory
    from mimo_core.run.batch import run_jobs
    from mimo_core.run.plan import RunRequest, plan_run
    from mimo_core.status import ExitStatus


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mimo_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), _ALIASES.get(name, name))
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
