"""`--runner ray` where Ray cannot be imported: one line saying how to install it, exit 2.

The interpreter runs isolated and without site (`-I -S`) on a sys.path that holds every installed package but Ray: the
mimoagent code is the real one; only the library is absent, as after `uv sync --no-dev` without the extra."""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

from tests.core.conftest import REPO

CHILD = "import sys; sys.path[:0] = sys.argv[1:3]; from mimo_core.cli.main import main; sys.exit(main(sys.argv[3:]))"


def _packages_without_ray(into: Path) -> Path:
    into.mkdir()
    for sp in site.getsitepackages():
        for entry in Path(sp).iterdir():
            if entry.name.split("-")[0].split(".")[0] != "ray" and not (into / entry.name).exists():
                (into / entry.name).symlink_to(entry)
    return into


def test_runner_ray_without_ray_is_one_line_saying_how_to_install(tmp_path: Path) -> None:
    packages = _packages_without_ray(tmp_path / "site")
    probe = subprocess.run(
        [sys.executable, "-I", "-S", "-c", "import sys; sys.path[:0] = [sys.argv[1]]; import ray", str(packages)],
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 1 and "No module named 'ray'" in probe.stderr  # Ray really is out of reach
    proc = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            CHILD,
            str(REPO),
            str(packages),
            "-c",
            str(REPO / "configs/demo.yaml"),
            "--dataset",
            str(REPO / "examples/demo.jsonl"),
            "--recalc-input",
            "gt",
            "-o",
            str(tmp_path / "out"),
            "--runner",
            "ray",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "MIMOAGENT_OBSERVERS": "0"},
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "mimoagent: error: --runner ray needs the ray extra: uv sync --extra ray (or pip install 'mimoagent[ray]')"
    ]
    assert not (tmp_path / "out").exists()
