"""The sandbox backend Dagster runs use, so one deployment can move every config to docker or k8s.
Fields are Dagster `EnvVar`s (`from_env()`), read when a run starts, like the model endpoint's."""

from __future__ import annotations

import os
from typing import Any, Self

from dagster import ConfigurableResource, EnvVar

from mimo_core.settings import CodeLocationSettings

VARIABLES = {field: CodeLocationSettings.variable(field) for field in ("environment_class", "image_prefix")}


class SandboxBackend(ConfigurableResource):
    environment_class: str | None = None  # local | docker | kubernetes
    image_prefix: str | None = None

    @classmethod
    def from_env(cls) -> Self:
        return cls(**{field: EnvVar(name) for field, name in VARIABLES.items() if os.environ.get(name)})

    def overrides(self) -> dict[str, Any]:
        env = {
            k: v for k, v in (("environment_class", self.environment_class), ("image_prefix", self.image_prefix)) if v
        }
        return {"environment": env} if env else {}
