"""The model endpoint a Dagster run talks to, from environment variables at run time.

Only the *names* of the variables are resource config (and so land in run configs on disk); the values,
the API key above all, are read from the environment when a run starts and live in memory only.
"""

from __future__ import annotations

import os
from typing import Any

from dagster import ConfigurableResource


class ModelEndpoint(ConfigurableResource):
    model_name_env: str = "MIMOAGENT_MODEL_NAME"
    base_url_env: str = "OPENAI_BASE_URL"
    api_key_env: str = "OPENAI_API_KEY"

    def overrides(self) -> dict[str, Any]:
        """A config patch for the variables that are set; unset ones leave each config's own values."""
        model: dict[str, Any] = {}
        kwargs: dict[str, Any] = {}
        if os.environ.get(self.model_name_env):
            model["model_name"] = os.environ[self.model_name_env]
        if os.environ.get(self.base_url_env):
            kwargs["base_url"] = os.environ[self.base_url_env]
        if os.environ.get(self.api_key_env):
            kwargs["api_key"] = os.environ[self.api_key_env]
        if kwargs:
            model["model_kwargs"] = kwargs
        return {"model": model} if model else {}
