"""One status vocabulary: every error class names its status, the resume sets do not overlap, and no
status is spelled as a string outside mimo_core/status.py."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import mimo_core
from mimo_core.errors import MimoError, status_of
from mimo_core.status import INFRA_STATUSES, INPUT_STATUSES, ExitStatus

ROOT = Path(__file__).resolve().parents[2]


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def test_every_error_class_maps_to_one_status() -> None:
    for info in pkgutil.walk_packages(mimo_core.__path__, "mimo_core."):
        if ".testing" not in info.name:
            importlib.import_module(info.name)
    classes = _subclasses(MimoError)
    assert len(classes) >= 8  # ConfigError, DatasetError, SandboxError, the model errors, ...
    for cls in [MimoError, *classes]:
        assert isinstance(cls.status, ExitStatus), cls
        assert status_of(cls("x")) is cls.status
    assert status_of(KeyError("x")) is ExitStatus.INTERNAL_ERROR  # not raised on purpose: a bug


def test_a_status_is_rerun_always_or_only_on_new_input_never_both() -> None:
    assert not INFRA_STATUSES & INPUT_STATUSES
    assert ExitStatus.CONFIG_ERROR in INPUT_STATUSES and ExitStatus.SUBMITTED not in INFRA_STATUSES | INPUT_STATUSES


def test_no_status_is_spelled_outside_status_py() -> None:
    names = "|".join(s.value for s in ExitStatus)
    literal = re.compile(r"""["'](""" + names + r""")["'](?!\s*:)""")  # a quoted status, not a dict key
    found = []
    for folder in ("mimo_core", "mimo_assets", "resources"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "status.py":
                continue
            for n, line in enumerate(path.read_text().splitlines(), start=1):
                if literal.search(line) and "__slots__" not in line:
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == []
