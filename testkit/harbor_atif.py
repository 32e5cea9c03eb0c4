"""Validate ATIF files with Harbor's own pydantic model, from its package on PyPI.

Harbor needs Python >= 3.12 and a long dependency list, so it is not installed: its wheel is fetched
once with pip (the registry's ordinary client, run by uv) into a cache folder, and only its
`harbor.models.trajectories` package (pydantic alone) is imported, in a child process.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

HARBOR_VERSION = "0.26.0"
CACHE = Path(os.environ.get("MIMOAGENT_TEST_CLI_CACHE") or Path.home() / ".cache" / "mimoagent-tests")

_CHECK = """
import json, sys
from pydantic import ValidationError
from harbor.models.trajectories import Trajectory
errors = {}
for path in sys.argv[1:]:
    try:
        Trajectory.model_validate_json(open(path).read())
    except ValidationError as e:
        errors[path] = str(e)
print(json.dumps(errors))
"""


def harbor_models_dir() -> Path:
    """A folder holding Harbor's wheel unpacked (cached; fetched from PyPI on first use)."""
    target = CACHE / f"harbor-{HARBOR_VERSION}"
    if (target / "harbor" / "models" / "trajectories" / "trajectory.py").exists():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"harbor-{HARBOR_VERSION}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        if (target / "harbor" / "models" / "trajectories" / "trajectory.py").exists():
            return target
        wheels = CACHE / f"harbor-{HARBOR_VERSION}-wheel"
        uv = shutil.which("uv") or "uv"
        subprocess.run(
            [
                uv,
                "tool",
                "run",
                "--from",
                "pip",
                "pip",
                "download",
                f"harbor=={HARBOR_VERSION}",
                "--no-deps",
                "--only-binary=:all:",
                "--python-version",
                "3.12",
                "-d",
                str(wheels),
            ],
            check=True,
            capture_output=True,
            timeout=300,
        )
        [wheel] = wheels.glob("harbor-*.whl")
        tmp = target.with_name(target.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        with zipfile.ZipFile(wheel) as z:
            z.extractall(tmp)
        os.replace(tmp, target)
    return target


def harbor_atif_errors(files: list[Path]) -> dict[str, str]:
    """Each file Harbor's `Trajectory` model refuses, with its validation error (empty: all valid)."""
    env = {**os.environ, "PYTHONPATH": str(harbor_models_dir())}
    out = subprocess.run(
        [sys.executable, "-c", _CHECK, *map(str, files)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout)
