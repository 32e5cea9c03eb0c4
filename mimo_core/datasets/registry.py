"""Dataset types by name, imported lazily, and the rule that picks a row's type when it names none."""

from __future__ import annotations

import importlib
import re
from typing import Any

from mimo_core.datasets.base import DatasetType
from mimo_core.errors import DatasetError

_TYPES = {
    "generic": "mimo_core.datasets.generic:GenericDatasetType",
    "deepswe": "mimo_core.datasets.deepswe:DeepSWEDatasetType",
    "opensource-code": "mimo_core.datasets.opensource_code:OpenSourceCodeDatasetType",
    "arvo": "mimo_core.datasets.arvo:ArvoDatasetType",
}
_ALIASES = {
    "swe-bench": "opensource-code",
    "swebench": "opensource-code",
    "harbor": "deepswe",
    "opensource_code": "opensource-code",
}


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


# The inference rules, first match wins; docs/datasets.md shows this table and
# tests/datasets/test_type_inference.py has one test per rule. Fields only one type carries come first:
# image names alone are ambiguous (DeepSWE's images live in repositories called `swe-bench-YYYYMM`).
_FIELD_RULES: list[tuple[tuple[str, ...], str]] = [
    (("verifier_mode", "collect", "harbor"), "deepswe"),
    (("FAIL_TO_PASS", "test_patch"), "opensource-code"),
    (("poc_cmd", "crash_type", "fuzz_target"), "arvo"),
]
_IMAGE_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"arvo"), "arvo"),
    (re.compile(r"deep-?swe|(^|/)swe-bench-\d{6}(:|@|$)"), "deepswe"),  # …/swe-bench-202605:<id>-v1.1
    (re.compile(r"sweb\.eval|swe-?bench"), "opensource-code"),
]


def infer_type(row: dict[str, Any]) -> str:
    """`dataset_type` when given; else the first field rule, then the first image rule; else generic."""
    if row.get("dataset_type"):
        return canonical_name(str(row["dataset_type"]))
    for fields, name in _FIELD_RULES:
        if any(f in row for f in fields):
            return name
    image = str(row.get("image") or row.get("image_name") or "").lower()
    for pattern, name in _IMAGE_RULES:
        if image and pattern.search(image):
            return name
    return "generic"
