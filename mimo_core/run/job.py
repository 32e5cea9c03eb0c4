"""One rollout to run, `RolloutJob`: what the planner makes, the runners carry (threads, Ray tasks) and
`run_one` runs; with its folder name, its key in results.jsonl and the fingerprint of its input.

Its own module because every part of a run names it (the planner, both runners, the record writer, the
Dagster assets) and none of them needs the rollout's machinery to do so."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from mimo_core.config import NamedConfig
from mimo_core.datasets.base import Task
from mimo_core.run.folder_names import folder_name, legacy_folder_name

GT = "gt"  # `recalc` for grading the reference solution


def safe_name(text: str) -> str:
    """`text` with every run of unsafe characters replaced by `_` (not injective: see folder_names)."""
    return legacy_folder_name(text)


class RolloutJob(BaseModel):
    """Everything one rollout needs; picklable, so batches can run in threads or processes."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    task: Task
    config: NamedConfig
    rollout_index: int = 0
    output_dir: Path
    run_id: str
    recalc: str | None = None  # None: run the agent; "gt": grade the reference; else a source directory
    recalc_submission: str | None = None  # the saved submission, for a recalc from a directory
    repo_fingerprint: str | None = None  # the row's repository folder when the run was planned (input_change)

    @property
    def rel_dir(self) -> str:
        return f"{folder_name(self.task.instance_id)}/{folder_name(self.config.name)}/{self.rollout_index}"

    @property
    def legacy_rel_dir(self) -> str:
        """Where this rollout's folder was before folder names were made injective."""
        return (
            f"{legacy_folder_name(self.task.instance_id)}/{legacy_folder_name(self.config.name)}/{self.rollout_index}"
        )

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.task.instance_id, self.config.name, self.rollout_index)

    @property
    def input_fingerprint(self) -> str:
        return input_fingerprint(self.config, self.task)


def input_fingerprint(config: NamedConfig, task: Task) -> str:
    """What a rollout's input was, as a short hash of the redacted config and the row: a rollout that
    failed through its input's fault is worth redoing only once this changes."""
    blob = json.dumps([config.redacted(), task.model_dump(mode="json")], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
