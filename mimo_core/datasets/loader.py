"""Read task rows from JSONL, parquet, a Harbor task folder, a local Hugging Face dataset or the hub.

Every row is validated into its dataset type's row model. Bad rows stop the load: all of them are
reported at once (file, row number, field), and none is ever dropped silently — a benchmark score over
a quietly shrunken dataset is worse than no score.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mimo_core.base.bounded import MAX_ROW_BYTES, TooBig, check_depth, load_json, read_lines
from mimo_core.base.strict_model import dotted, problem_text
from mimo_core.datasets.base import Task
from mimo_core.datasets.registry import get_dataset_type, infer_type
from mimo_core.errors import ConfigError, DatasetError

MAX_REPORTED = 50
MAX_ROW_DEPTH = 100  # nesting of one row's JSON (test files maps, metadata): far beyond any real row


def _read_jsonl(path: Path, errors: list[str]) -> list[tuple[int, Any]]:
    rows: list[tuple[int, Any]] = []
    with open(path, "rb") as fh:
        for number, raw in read_lines(fh, MAX_ROW_BYTES):
            if raw is None:
                errors.append(
                    f"{path}: row {number}: longer than {MAX_ROW_BYTES >> 20} MiB (the file is not read further)"
                )
                break
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                errors.append(
                    f"{path}: row {number}: not valid UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})"
                )
                continue
            if not line.strip():
                continue
            try:
                rows.append((number, load_json(line, MAX_ROW_DEPTH)))
            except json.JSONDecodeError as e:
                errors.append(f"{path}: row {number}: invalid JSON ({e.msg} at column {e.colno})")
            except TooBig as e:
                errors.append(f"{path}: row {number}: {e}")
    return rows


def _read_parquet(path: Path) -> list[tuple[int, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return list(enumerate(pq.read_table(path).to_pylist(), start=1))
    except (pa.ArrowException, OSError, ValueError) as e:
        raise DatasetError(f"{path}: not a readable parquet file ({' '.join(str(e).split())[:300]})") from None


def _pick_split(ds: Any, split: str | None, source: str) -> Any:
    """A DatasetDict needs a split; with exactly one, take it rather than make the user name it."""
    if not hasattr(ds, "keys"):
        return ds
    names = list(ds.keys())
    if split is None:
        if len(names) == 1:
            return ds[names[0]]
        raise DatasetError(f"{source}: several splits {names}; choose one with --split")
    if split not in ds:
        raise DatasetError(f"{source}: no split {split!r}; available: {names}")
    return ds[split]


def _read_hf(source: str, split: str | None, local: bool) -> list[tuple[int, Any]]:
    try:
        import datasets
    except ImportError as e:  # pragma: no cover - datasets is a dependency
        raise DatasetError(f"{source}: the `datasets` package is needed to read it ({e})") from None
    try:
        path = Path(source)
        if local and (
            (path / "dataset_info.json").exists()
            or (path / "dataset_dict.json").exists()
            or (path / "state.json").exists()
        ):
            ds = datasets.load_from_disk(str(path))
        else:
            ds = datasets.load_dataset(source) if split is None else datasets.load_dataset(source, split=split)
    except DatasetError:
        raise
    except Exception as e:
        raise DatasetError(f"{source}: could not load as a Hugging Face dataset: {type(e).__name__}: {e}") from None
    return list(enumerate(_pick_split(ds, split, source), start=1))


def read_rows(source: str, split: str | None = None) -> tuple[list[tuple[int, Any]], list[str]]:
    """Raw rows with their 1-based row numbers (the line number for JSONL), plus read errors."""
    from mimo_core.datasets import harbor

    errors: list[str] = []
    path = Path(source)
    try:
        if path.is_file():
            _no_split(split, source, "a parquet file" if path.suffix == ".parquet" else "a JSONL file")
            if path.suffix == ".parquet":
                return _read_parquet(path), errors
            return _read_jsonl(path, errors), errors
        if path.is_dir():
            if harbor.is_harbor_dir(path):
                _no_split(split, source, "a folder of Harbor tasks")
                return list(enumerate(harbor.convert_dir(path), start=1)), errors
            return _read_hf(source, split, local=True), errors
    except OSError as e:
        raise DatasetError(f"{source}: cannot read it ({e.strerror or e})") from None
    if path.exists():
        raise DatasetError(f"{source}: not a regular file or a folder")
    if path.suffix in {".jsonl", ".json", ".parquet"} or source.startswith((".", "/")):
        raise DatasetError(f"{source}: dataset file not found")
    return _read_hf(source, split, local=False), errors


def _no_split(split: str | None, source: str, kind: str) -> None:
    if split is not None:
        raise ConfigError(
            f"--split {split}: {source} is {kind}, which has no splits (--split is for Hugging Face datasets)"
        )


def validate_row(raw: Any, source: str, number: int, origin: str | None = None) -> Task:
    """One row → its type's row model; a DatasetError names the file, the row and the field. Relative
    paths in it are relative to `origin` (default: `source`), the dataset the row was first read from."""
    where = f"{source}: row {number}"
    if not isinstance(raw, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    try:
        check_depth(raw, MAX_ROW_DEPTH)
    except TooBig as e:
        raise DatasetError(f"{where}: {e}") from None
    try:
        type_name = infer_type(raw)
    except DatasetError as e:
        raise DatasetError(f"{where}: field dataset_type: {e}") from None
    model = get_dataset_type(type_name).row_model
    try:
        task = model.model_validate({**raw, "dataset_type": type_name})
    except ValidationError as e:
        parts = []
        for err in e.errors():
            field = dotted(err["loc"]) or "<row>"
            parts.append(f"{where}: field {field}: {problem_text(err)}")
        raise DatasetError("; ".join(parts)) from None
    task.source = origin or source
    problem = _repo_dir_problem(task)
    if problem:
        raise DatasetError(f"{where}: field repo_dir: {problem}")
    return task


def _repo_dir_problem(task: Task) -> str | None:
    """A row's starting files come from inside the dataset's own folder: `repo_dir: /` or `../../..`
    would copy the host into every sandbox."""
    from mimo_core.datasets.repo_dataset import RepoTask  # the row model of every type with a repo_dir

    if not isinstance(task, RepoTask) or not task.repo_dir or not task.source:
        return None
    repo_dir = task.repo_dir
    base = Path(task.source)
    base = (base if base.is_dir() else base.parent).resolve()
    try:
        target = task.resolve(repo_dir).resolve()
    except (OSError, RuntimeError, ValueError) as e:  # a link loop, a NUL byte
        return f"{repo_dir!r} cannot be resolved ({e})"
    if target != base and not target.is_relative_to(base):
        return f"{repo_dir!r} lies outside the dataset's folder {base}; put the repository inside it"
    return None


def load_tasks(source: str, split: str | None = None, origin: str | None = None) -> list[Task]:
    rows, errors = read_rows(source, split)
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for number, raw in rows:
        try:
            task = validate_row(raw, source, number, origin)
        except DatasetError as e:
            errors.append(str(e))
            continue
        if task.instance_id in seen:
            errors.append(
                f"{source}: row {number}: field instance_id: {task.instance_id!r} "
                f"duplicates row {seen[task.instance_id]}"
            )
            continue
        seen[task.instance_id] = number
        tasks.append(task)
    if len(errors) == 1:
        raise DatasetError(f"{errors[0]} (fix the row or remove it from the dataset)")
    if errors:
        shown = errors[:MAX_REPORTED]
        more = f"\n... and {len(errors) - MAX_REPORTED} more" if len(errors) > MAX_REPORTED else ""
        raise DatasetError(
            f"{len(errors)} bad row(s); fix them or remove them from the dataset:\n" + "\n".join(shown) + more
        )
    return tasks


def parse_slice(text: str) -> slice:
    """`A:B`, `A:`, `:B`, `A:B:STEP` (Python slice semantics) or `N` (the first N)."""
    try:
        if ":" not in text:
            return slice(0, int(text))
        parts = text.split(":")
        if len(parts) > 3:
            raise ValueError
        values = [int(p) if p.strip() else None for p in parts]
    except ValueError:
        raise ConfigError(f"--slice: {text!r} is not a slice; use A:B, A:, :B or N") from None
    if len(values) == 3 and values[2] == 0:
        raise ConfigError(f"--slice: {text!r}: the step cannot be 0")
    return slice(*values)


def select_tasks(
    tasks: list[Task], slice: str | None = None, filter: str | None = None, shuffle: bool = False, seed: int = 0
) -> list[Task]:
    """filter (regex searched in instance ids) → shuffle (seeded, independent of row order) → slice."""
    selected = list(tasks)
    if filter:
        try:
            pattern = re.compile(filter)
        except re.error as e:
            raise ConfigError(f"--filter: invalid regex {filter!r}: {e}") from None
        selected = [t for t in selected if pattern.search(t.instance_id)]
    if shuffle:
        selected.sort(key=lambda t: t.instance_id)
        random.Random(seed).shuffle(selected)
    if slice:
        selected = selected[parse_slice(slice)]
    return selected
