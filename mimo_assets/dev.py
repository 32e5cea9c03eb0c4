"""`mimoagent-dagster dev|webserver ...`: the Dagster UI on the instance CLI runs record into."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from mimo_assets.helpers.home import dagster_home

WORKSPACE = Path(__file__).resolve().parent.parent / "workspace.yaml"


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv) or ["dev"]
    os.environ["DAGSTER_HOME"] = str(dagster_home())
    tool = "dagster-webserver" if args[0] == "webserver" else "dagster"
    rest = args[1:] if args[0] == "webserver" else args
    exe = shutil.which(tool) or tool
    if "-w" not in rest and "--workspace" not in rest:
        rest = [*rest, "-w", str(WORKSPACE)]
    print(f"DAGSTER_HOME={os.environ['DAGSTER_HOME']}", file=sys.stderr)
    os.execvp(exe, [exe, *rest])
