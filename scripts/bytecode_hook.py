"""Hatch build hook: byte-compile the project's own packages when they are installed editable.

`uv sync --compile-bytecode` compiles what it installs into the venv, but an editable install leaves the
code in the source tree, so it was never compiled: where PYTHONDONTWRITEBYTECODE is set, every start
then compiled every module again. This compiles them once, in place, at install time.
"""

from __future__ import annotations

import compileall
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PACKAGES = ("mimo_core", "mimo_assets", "resources")


class BytecodeHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version != "editable":
            return  # a regular wheel's installer compiles it (uv --compile-bytecode, pip)
        for name in PACKAGES:
            compileall.compile_dir(Path(self.root) / name, quiet=1, workers=0)
