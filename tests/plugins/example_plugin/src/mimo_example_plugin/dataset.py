"""A dataset type: `generic` whose rows carry a `note`, which grading copies into the record.

A dataset type plug-in is a `DatasetType` (mimo_core/datasets/base.py); a row names it in `dataset_type`.
"""

from __future__ import annotations

from typing import ClassVar

from mimo_core.datasets.base import EnvFactory, Task
from mimo_core.datasets.generic import GenericDatasetType, GenericTask
from mimo_core.environments.base import Environment
from mimo_core.grading.grade import Grade


class NotedTask(GenericTask):
    note: str  # required: a row of this type without one is a dataset error naming the field


class NotedDatasetType(GenericDatasetType):
    name: ClassVar[str] = "noted"
    row_model: ClassVar[type[Task]] = NotedTask

    def _grade(self, env: Environment, task: Task, submission: str, new_env: EnvFactory) -> Grade:
        assert isinstance(task, NotedTask)
        grade = super()._grade(env, task, submission, new_env)
        grade.details["row_note"] = task.note  # a scalar detail: results.jsonl's `grading` keeps it
        return grade
