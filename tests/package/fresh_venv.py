"""A fresh virtualenv holding the product as a user installs it: the wheel built from this checkout and the
locked runtime set (uv.lock without the dev group), from uv's cache (the registry only for what it lacks).
The wheel's test and the plug-in package's test (tests/plugins) build theirs this way."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def uv() -> str:
    found = os.environ.get("UV") or shutil.which("uv")
    if not found:
        pytest.fail("uv is not on PATH (the README installs it with `pip install uv`)")
    return found


def run(*cmd: str, cwd: Path = ROOT, timeout: float = 300, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def build_wheel(out: Path) -> Path:
    run(uv(), "build", "--wheel", "--out-dir", str(out), str(ROOT))
    [built] = out.glob("mimoagent-*.whl")
    return built


def runtime_venv(folder: Path, wheel: Path, *more: str) -> Path:
    """`folder/venv` with the locked runtime set, the wheel and `more` (paths or requirements, installed
    without their dependencies); `folder/requirements.txt` is that runtime set. Returns the venv."""
    requirements = folder / "requirements.txt"
    requirements.write_text(
        run(uv(), "export", "--frozen", "--no-dev", "--no-emit-project", "--no-hashes", "--project", str(ROOT))
    )
    venv = folder / "venv"
    run(uv(), "venv", "--quiet", "--python", sys.executable, str(venv))
    python = str(venv / "bin" / "python")
    install = [uv(), "pip", "install", "--quiet", "--no-deps", "--python", python, "-r", str(requirements)]
    install += [str(wheel), *more]
    # Everything is in uv's cache after `uv sync`; ask the registry only if it is not.
    if subprocess.run([*install, "--offline"], capture_output=True, timeout=600).returncode != 0:
        run(*install, timeout=600)
    return venv
