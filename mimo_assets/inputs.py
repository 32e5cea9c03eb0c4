"""The inputs every rollout depends on: the converted dataset and the registered config files.

Both are unpartitioned assets whose materialization is skipped when nothing changed (same data
version), so re-running a CLI command does not materialize them again. Partitions are added by whoever
plans rollouts (`partitions.register_planned`), not here.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import AssetKey, AssetMaterialization, DagsterInstance, MetadataValue

from mimo_assets.asset_keys import CONFIG_FILES, CONVERTED_JSONL, DATASET_ROWS
from mimo_assets.eventlog.events import _DATA_VERSION, Upstream
from mimo_assets.input_versions import ConfigFile, RecordedDataset, config_files, converted_text, recorded_dataset
from mimo_assets.partitions import dataset_name
from mimo_core.base.atomic_files import atomic_write_text
from mimo_core.datasets.base import Task

if TYPE_CHECKING:
    from mimo_assets.dagster_private import RawMetadataValue


def latest(instance: DagsterInstance, key: AssetKey) -> tuple[int | None, str | None, dict[str, Any]]:
    """(storage id, data version, metadata values) of an asset's latest materialization."""
    result = instance.fetch_materializations(key, limit=1)
    if not result.records:
        return None, None, {}
    record = result.records[0]
    mat = record.asset_materialization
    tags = (mat.tags if mat else None) or {}
    meta = {k: v.value for k, v in ((mat.metadata if mat else None) or {}).items()}
    return record.storage_id, tags.get(_DATA_VERSION), meta


def upstream(instance: DagsterInstance) -> Upstream:
    out = Upstream()
    for key in (CONVERTED_JSONL, CONFIG_FILES):
        storage_id, version, _ = latest(instance, key)
        out.inputs[key] = (storage_id, version or "INITIAL")
    return out


def converted_path(datasets_dir: Path, source: str, split: str | None, version: str) -> Path:
    """Where a dataset's converted JSONL of that version is: `<dataset name>-<content hash>.jsonl`."""
    return datasets_dir / f"{dataset_name(source, split)}-{version}.jsonl"


def convert_dataset(tasks: list[Task], source: str, split: str | None, datasets_dir: Path) -> tuple[Path, str]:
    """Write the validated rows as mimoagent JSONL, named `<dataset name>-<content hash>.jsonl`."""
    text, version = converted_text(tasks)
    path = converted_path(datasets_dir, source, split, version)
    if not path.exists():
        atomic_write_text(path, text)
        # Rows may name folders relative to the original file (repo_dir, ...): remember where it was.
        atomic_write_text(path.with_suffix(".source"), str(Path(source).resolve()) + "\n")
    return path, version


def converted_files(datasets_dir: Path, dataset: str) -> list[Path]:
    """Every converted JSONL of one dataset (by its name in partition keys), newest first."""
    files = [
        p for p in datasets_dir.glob(f"{dataset}-*.jsonl") if re.fullmatch(r"[0-9a-f]{16}", p.stem[len(dataset) + 1 :])
    ]
    return sorted(files, key=lambda p: p.stat().st_mtime, reverse=True)


def load_converted(path: Path) -> list[Task]:
    """Rows of a converted JSONL, resolving relative paths against the dataset they came from."""
    from mimo_core.datasets.loader import load_tasks

    sidecar = path.with_suffix(".source")
    return load_tasks(str(path), origin=sidecar.read_text().strip() if sidecar.exists() else None)


def dataset_events(
    instance: DagsterInstance,
    tasks: list[Task],
    source: str,
    split: str | None,
    datasets_dir: Path,
    tags: dict[str, str] | None = None,
    force: bool = False,
) -> list[AssetMaterialization]:
    """Materialize the dataset's two assets only if the content changed."""
    path, version = convert_dataset(tasks, source, split, datasets_dir)
    _, latest_version, _ = latest(instance, CONVERTED_JSONL)
    if latest_version == version and not force:
        return []
    return _dataset_materializations(recorded_dataset(tasks, version), path, source, split, tags)


def recorded_dataset_events(
    instance: DagsterInstance,
    dataset: RecordedDataset,
    source: str,
    split: str | None,
    datasets_dir: Path,
    tags: dict[str, str] | None = None,
) -> list[AssetMaterialization] | None:
    """`dataset_events` from a run's record of its dataset, without its rows: nothing when that version is
    the latest; None when its converted file was never written (the caller loads the rows for it)."""
    _, latest_version, _ = latest(instance, CONVERTED_JSONL)
    if latest_version == dataset.version:
        return []
    path = converted_path(datasets_dir, source, split, dataset.version)
    if not path.exists():
        return None
    return _dataset_materializations(dataset, path, source, split, tags)


def _dataset_materializations(
    dataset: RecordedDataset, path: Path, source: str, split: str | None, tags: dict[str, str] | None
) -> list[AssetMaterialization]:
    version = dataset.version
    source_meta: dict[str, RawMetadataValue] = {
        "source": source,
        "split": split or "",
        "rows": dataset.rows,
        "dataset": dataset_name(source, split),
    }
    rows = AssetMaterialization(
        DATASET_ROWS,
        metadata={**source_meta, "dataset_types": dataset.dataset_types},
        tags={**(tags or {}), _DATA_VERSION: version},
    )
    converted = AssetMaterialization(
        CONVERTED_JSONL,
        metadata={
            **source_meta,
            "path": MetadataValue.path(str(path)),
            "preview": MetadataValue.md("\n".join(f"- `{i}` ({kind})" for i, kind in dataset.preview)),
        },
        tags={**(tags or {}), _DATA_VERSION: version, "dagster/input_data_version/dataset_rows": version},
    )
    return [rows, converted]


def registered_configs(instance: DagsterInstance) -> dict[str, str]:
    """Config name → file path, as recorded by the latest `config_files` materialization."""
    _, _, meta = latest(instance, CONFIG_FILES)
    return dict(meta.get("configs") or {})


def config_events(
    instance: DagsterInstance,
    config_paths: list[str],
    tags: dict[str, str] | None = None,
    force: bool = False,
    files: dict[str, ConfigFile] | None = None,
) -> list[AssetMaterialization]:
    """Record each config's name → path (never the file's values: they may
    hold expanded secrets; nor are they expanded here, where the run's variables may be unset).
    Skipped when every file is already registered unchanged. `files`: the files as a run recorded them
    (`input_versions.config_files`), else they are read now."""
    _, _, meta = latest(instance, CONFIG_FILES)
    known: dict[str, str] = dict(meta.get("configs") or {})
    hashes: dict[str, str] = dict(meta.get("hashes") or {})
    changed = False
    for name, file in (files if files is not None else config_files(config_paths)).items():
        if known.get(name) != file.path or hashes.get(name) != file.sha256:
            known[name], hashes[name] = file.path, file.sha256
            changed = True
    if not changed and not force:
        return []
    version = hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()[:16]
    table = ["| config | path | sha256 |", "|---|---|---|"]
    table += [f"| {n} | `{p}` | {hashes[n]} |" for n, p in sorted(known.items())]
    return [
        AssetMaterialization(
            CONFIG_FILES,
            metadata={
                "configs": MetadataValue.json(known),
                "hashes": MetadataValue.json(hashes),
                "count": len(known),
                "table": MetadataValue.md("\n".join(table)),
            },
            tags={**(tags or {}), _DATA_VERSION: version},
        )
    ]


def yaml_files(directory: str) -> list[str]:
    if not directory:
        return []
    root = Path(directory).expanduser()
    return sorted(str(p.resolve()) for p in [*root.glob("*.yaml"), *root.glob("*.yml")]) if root.is_dir() else []
