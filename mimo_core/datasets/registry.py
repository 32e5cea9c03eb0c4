"""Dataset types by name (`mimo_core/plugins.py`'s, aliases included), imported lazily, and the rule that
picks a row's type when it names none."""

from __future__ import annotations

import re
from typing import Any

from mimo_core import plugins
from mimo_core.datasets.base import DatasetType


def known_types() -> list[str]:
    return sorted(plugins.names("datasets"))


def canonical_name(name: str) -> str:
    """The type an alias stands for; an unknown name is a DatasetError listing the known ones."""
    return plugins.canonical("datasets", name)


def get_dataset_type(name: str, collect: str = "strict") -> DatasetType:
    """A fresh instance per rollout; `collect` is the config's `grading.collect` (strict | lenient)."""
    return plugins.lookup("datasets", name)(collect=collect)


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
