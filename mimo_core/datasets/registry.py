"""Dataset types by name, imported lazily, and the rule that picks a row's type when it names none."""

from __future__ import annotations

import importlib
from typing import Any

from mimo_core.datasets.base import DatasetType
from mimo_core.errors import DatasetError

_TYPES = {
    "generic": "mimo_core.datasets.generic:GenericDatasetType",
    "deepswe": "mimo_core.datasets.deepswe:DeepSWEDatasetType",
    "opensource-code": "mimo_core.datasets.opensource_code:OpenSourceCodeDatasetType",
    "arvo": "mimo_core.datasets.arvo:ArvoDatasetType",
}
_ALIASES = {"swe-bench": "opensource-code", "swebench": "opensource-code", "harbor": "deepswe",
            "opensource_code": "opensource-code"}


def known_types() -> list[str]:
    return sorted(_TYPES)


def canonical_name(name: str) -> str:
    name = _ALIASES.get(name, name)
    if name not in _TYPES:
        raise DatasetError(f"unknown dataset_type {name!r}; known: {', '.join(known_types())}")
    return name


def get_dataset_type(name: str, collect: str = "strict") -> DatasetType:
    """A fresh instance per rollout; `collect` is the config's `grading.collect` (strict | lenient)."""
    module, _, cls = _TYPES[canonical_name(name)].partition(":")
    return getattr(importlib.import_module(module), cls)(collect=collect)


def infer_type(row: dict[str, Any]) -> str:
    """`dataset_type` when given; else the row's shape, then its image name; else generic.

    Image names alone are ambiguous (DeepSWE images live in a repository called `swe-bench-...`), so
    fields that only one type carries are checked first.
    """
    if row.get("dataset_type"):
        return canonical_name(str(row["dataset_type"]))
    if "verifier_mode" in row or "collect" in row or "harbor" in row:
        return "deepswe"
    if "FAIL_TO_PASS" in row or "test_patch" in row:
        return "opensource-code"
    if "poc_cmd" in row or "crash_type" in row or "fuzz_target" in row:
        return "arvo"
    image = str(row.get("image") or row.get("image_name") or "").lower()
    if "arvo" in image:
        return "arvo"
    if "deep-swe" in image or "deepswe" in image:
        return "deepswe"
    if "sweb.eval" in image or "swebench" in image or "swe-bench" in image:
        return "opensource-code"
    return "generic"
