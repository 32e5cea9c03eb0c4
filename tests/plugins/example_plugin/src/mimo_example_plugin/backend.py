"""A backend: the local one, appending a line to a marker file each time one of its sandboxes starts.

Its options are checked at config load like a built-in's (`options_model`), and it can do what the local
backend can (`capabilities` is inherited).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mimo_core.config import EnvironmentConfig
from mimo_core.environments.base import SandboxSpec
from mimo_core.environments.local.environment import LocalEnvironment, LocalOptions


class MarkedOptions(LocalOptions):
    marker: str  # the file each start appends a line to


class MarkedLocalEnvironment(LocalEnvironment):
    options_model = MarkedOptions  # what environment.backend_kwargs may hold

    def __init__(self, spec: SandboxSpec, config: EnvironmentConfig, **extra: Any) -> None:
        options = MarkedOptions.model_validate(config.backend_kwargs)
        self.marker = Path(options.marker)
        local = config.model_copy(update={"backend_kwargs": options.model_dump(exclude={"marker"})})
        super().__init__(spec, local, **extra)

    def start(self) -> None:
        super().start()
        with self.marker.open("a") as f:
            f.write(f"started {self.spec.cwd}\n")
