"""The wheel a user installs: the product's packages only, none of the test support, and importable on
the runtime dependencies alone (installed from uv.lock, without the dev group, into a fresh venv)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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


def _uv() -> str:
    found = os.environ.get("UV") or shutil.which("uv")
    if not found:
        pytest.fail("uv is not on PATH (the README installs it with `pip install uv`)")
    return found


def _run(*cmd: str, cwd: Path = ROOT, timeout: float = 300) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _names(requirements: str) -> set[str]:
    return {_name(line) for line in requirements.splitlines() if line.strip() and line[0] not in "# -"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _run(_uv(), "build", "--wheel", "--out-dir", str(out), str(ROOT))
    [built] = out.glob("mimoagent-*.whl")
    return built


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
    uv = _uv()
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(
        _run(uv, "export", "--frozen", "--no-dev", "--no-emit-project", "--no-hashes", "--project", str(ROOT))
    )
    venv = tmp_path / "venv"
    _run(uv, "venv", "--quiet", "--python", sys.executable, str(venv))
    python = str(venv / "bin" / "python")
    install = [uv, "pip", "install", "--quiet", "--no-deps", "--python", python, "-r", str(requirements), str(wheel)]
    # Everything is in uv's cache after `uv sync`; ask the registry only if it is not.
    if subprocess.run([*install, "--offline"], capture_output=True, timeout=600).returncode != 0:
        _run(*install, timeout=600)
    installed = _names(_run(uv, "pip", "freeze", "--python", python))
    dev_only = {_name(r) for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]["dev"]}
    dev_only -= _names(requirements.read_text())  # what the product itself needs (websockets, ...) stays
    assert "pytest" in dev_only and not dev_only & installed, dev_only & installed
    failed = _run(python, "-I", "-c", IMPORT_ALL, *PRODUCT, cwd=tmp_path, timeout=600).strip()
    assert failed == "", failed
