"""What Dagster records of a run's inputs, computed without Dagster: the converted dataset's version and a
summary of its rows, each config file's path and hash.

Both doors compute them with these functions: the input assets (inputs.py) from what they load, and a CLI
run's observer from the rows and configs the CLI already holds, into its registry entry. So the recording
of a CLI run (cli_recording/record.py) registers the inputs the run used, as they were when it ran, without
loading the dataset or reading the config files again. Light: the CLI imports this, and no Dagster.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from mimo_core.datasets.base import Task

PREVIEW_ROWS = 10


class RecordedDataset(BaseModel):
    """A dataset as its assets record it: the version of its converted JSONL and what its rows are."""

    version: str  # sha256 of the converted text, 16 hex digits: the converted file's name and data version
    rows: int
    dataset_types: dict[str, int]  # rows per dataset type
    preview: list[tuple[str, str]]  # (instance_id, dataset_type) of the first rows


class ConfigFile(BaseModel):
    """A config file as the `config_files` asset records it (never its values: they may hold secrets)."""

    path: str  # absolute
    sha256: str  # of the file's bytes, 16 hex digits


def converted_text(tasks: list[Task]) -> tuple[str, str]:
    """The rows as mimoagent JSONL, and its version."""
    text = "".join(t.model_dump_json() + "\n" for t in tasks)
    return text, hashlib.sha256(text.encode()).hexdigest()[:16]


def recorded_dataset(tasks: list[Task], version: str | None = None) -> RecordedDataset:
    """The record of `tasks`; `version` when the caller has it already (from `converted_text`)."""
    types: dict[str, int] = {}
    for t in tasks:
        types[t.dataset_type] = types.get(t.dataset_type, 0) + 1
    return RecordedDataset(
        version=version or converted_text(tasks)[1],
        rows=len(tasks),
        dataset_types=types,
        preview=[(t.instance_id, t.dataset_type) for t in tasks[:PREVIEW_ROWS]],
    )


def config_files(paths: Iterable[str]) -> dict[str, ConfigFile]:
    """Config name (the file's stem, as mimo_core.config.read_config names it) -> its path and hash."""
    found: dict[str, ConfigFile] = {}
    for raw in paths:
        path = str(Path(raw).resolve())
        found[Path(path).stem] = ConfigFile(path=path, sha256=hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16])
    return found
