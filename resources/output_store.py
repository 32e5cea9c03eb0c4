"""Where Dagster-launched runs write: one folder per run under a root, datasets and tables beside them.

CLI runs write wherever `-o` points; their materializations record that absolute path, so the results
table finds every run's results.jsonl no matter which door it came through.
"""

from __future__ import annotations

import os
from pathlib import Path

from dagster import ConfigurableResource

from mimo_core.settings import CodeLocationSettings

ROOT_ENV = CodeLocationSettings.variable("output_root")
DEFAULT_ROOT = str(CodeLocationSettings.model_fields["output_root"].default)


class OutputStore(ConfigurableResource):
    root_env: str = ROOT_ENV  # a deployment may name another variable

    @property
    def root(self) -> Path:
        if self.root_env == ROOT_ENV:
            return Path(CodeLocationSettings.read().output_root).expanduser().resolve()
        return Path(os.environ.get(self.root_env) or DEFAULT_ROOT).expanduser().resolve()

    def run_dir(self, run_id: str) -> Path:
        return self.root / "runs" / run_id

    def datasets_dir(self) -> Path:
        path = self.root / "datasets"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def tables_dir(self) -> Path:
        path = self.root / "tables"
        path.mkdir(parents=True, exist_ok=True)
        return path
