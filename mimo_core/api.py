"""The library's front door: compose a config, a dataset row, a backend and an agent in code, and run
one rollout, with the same checks and the same outputs as the `mimoagent` command.

These functions are exported from `mimo_core` itself (lazily: see `mimo_core/__init__.py`); docs/library.md
shows them at work. A batch with resume, A/B assignment and a worker pool is `plan_run` + `run_jobs`,
what the command line and the Dagster assets call.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mimo_core.config import NamedConfig, validate_config
from mimo_core.config_checks import check_config, check_templates_fit
from mimo_core.datasets.base import Task
from mimo_core.datasets.loader import validate_row
from mimo_core.records.results import ResultRecord
from mimo_core.run.job import RolloutJob
from mimo_core.run.plan import new_run_id
from mimo_core.run.rollout import run_one


def make_config(data: Mapping[str, Any], name: str = "config") -> NamedConfig:
    """A config from a mapping shaped like a config file (`agent`, `environment` (the backend), `model`,
    `grading`), `${VAR}` and `${VAR:-default}` expanded, and checked as a file is when it loads: an unknown
    key, tool, agent type or backend option, or a template that does not compile, is a `ConfigError`
    naming the key. `name` is the config's name in every output (a file's stem, for files)."""
    source = f"<config {name}>"
    named = NamedConfig(name=name, path=source, config=validate_config(dict(data), source))
    check_config(named)
    return named


def make_task(row: Mapping[str, Any], source: str | Path | None = None) -> Task:
    """A dataset row validated into its dataset type's row model, the type named by `dataset_type` or
    inferred as for a file's rows; a bad row is a `DatasetError` naming the field. Relative paths in the
    row (`repo_dir`) are taken from `source`, a dataset file or folder, as they are for a file's rows."""
    task = validate_row(dict(row), str(source) if source is not None else "<row>", 1)
    task.source = str(source) if source is not None else None
    return task


def run_rollout(
    task: Task, config: NamedConfig, output_dir: str | Path, rollout_index: int = 0, run_id: str | None = None
) -> ResultRecord:
    """Run one rollout end to end (sandbox up, agent, submission, judge, verifier, files) and return its
    `results.jsonl` record. Its files land in `output_dir/<instance>/<config>/<rollout_index>/`, the
    record in `output_dir/results.jsonl`, as for a CLI run. A rollout's own failure (the model, the
    sandbox, the grader) is the record's `exit_status`, never an exception; a config whose templates
    need a field the row lacks is a `ConfigError` before any sandbox starts."""
    check_templates_fit([config], [task])
    job = RolloutJob(
        task=task,
        config=config,
        rollout_index=rollout_index,
        output_dir=Path(output_dir),
        run_id=run_id or new_run_id(),
    )
    return run_one(job)
