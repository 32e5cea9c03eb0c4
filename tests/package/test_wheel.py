"""The wheel a user installs: the product's packages only, none of the test support, and importable on
the runtime dependencies alone (installed from uv.lock, without the dev group, into a fresh venv)."""

from __future__ import annotations

import re
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.package.fresh_venv import ROOT, build_wheel, runtime_venv
from tests.package.fresh_venv import run as _run
from tests.package.fresh_venv import uv as _uv

SUPPORT = ("testkit", "tests", "bench")  # the checkout's test support: never shipped
PRODUCT = ("mimo_core", "mimo_assets", "resources")

# Import every module of the product from the installed wheel; print what failed, one per line.
IMPORT_ALL = """
import importlib, pkgutil, sys
failed = []
for name in sys.argv[1:]:
    pkg = importlib.import_module(name)
    assert "site-packages" in pkg.__file__, pkg.__file__
    for info in pkgutil.walk_packages(pkg.__path__, name + "."):
        try:
            importlib.import_module(info.name)
        except Exception as exc:
            failed.append(f"{info.name}: {exc!r}")
support = sorted(m for m in sys.modules if m.split(".")[0] in {"testkit", "tests", "bench"})
print("\\n".join(failed + [f"support module loaded: {m}" for m in support]))
"""


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _names(requirements: str) -> set[str]:
    return {_name(line) for line in requirements.splitlines() if line.strip() and line[0] not in "# -"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_wheel_holds_the_product_and_no_test_support(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == set(PRODUCT), tops
    shipped_support = [n for n in names if any(part in SUPPORT or part == "testing" for part in n.split("/")[:-1])]
    assert shipped_support == []
    assert "mimo_core/run/rollout.py" in names and "mimo_assets/definitions.py" in names


def test_the_product_imports_on_its_runtime_dependencies_alone(wheel: Path, tmp_path: Path) -> None:
    """A fresh venv with the locked runtime set (no dev group) and the wheel: every module imports, and
    none of them pulls in the test kit."""
    venv = runtime_venv(tmp_path, wheel)
    requirements = tmp_path / "requirements.txt"
    python = str(venv / "bin" / "python")
    installed = _names(_run(_uv(), "pip", "freeze", "--python", python))
    dev_only = {_name(r) for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]["dev"]}
    dev_only -= _names(requirements.read_text())  # what the product itself needs (websockets, ...) stays
    assert "pytest" in dev_only and not dev_only & installed, dev_only & installed
    failed = _run(python, "-I", "-c", IMPORT_ALL, *PRODUCT, cwd=tmp_path, timeout=600).strip()
    assert failed == "", failed
