"""The sandbox backend Dagster runs use, so one deployment can move every config to docker or k8s."""

from __future__ import annotations

import os
from typing import Any

from dagster import ConfigurableResource


class SandboxBackend(ConfigurableResource):
    environment_class_env: str = "MIMOAGENT_ENVIRONMENT_CLASS"  # local | docker | kubernetes
    image_prefix_env: str = "MIMOAGENT_IMAGE_PREFIX"

    def overrides(self) -> dict[str, Any]:
        env: dict[str, Any] = {}
        if os.environ.get(self.environment_class_env):
            env["environment_class"] = os.environ[self.environment_class_env]
        if os.environ.get(self.image_prefix_env):
            env["image_prefix"] = os.environ[self.image_prefix_env]
        return {"environment": env} if env else {}
