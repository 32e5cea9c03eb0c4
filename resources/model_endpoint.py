"""The model endpoint a Dagster run talks to: Dagster `EnvVar`s, read when a run starts.

`from_env()` gives each field an `EnvVar` for the variables set where the code location loads, so the
UI's resource page names the variables and no value (the API key above all) is ever stored in a run
config or the event log. Unset fields leave each config's own model block as it is.
"""

from __future__ import annotations

import os
from typing import Any, Self

from dagster import ConfigurableResource, EnvVar

from mimo_core.settings import CodeLocationSettings

# The model's name is ours (docs/settings.md); the endpoint and key are the OpenAI SDK's own variables.
VARIABLES = {
    "model_name": CodeLocationSettings.variable("model_name"),
    "base_url": "OPENAI_BASE_URL",
    "api_key": "OPENAI_API_KEY",
}


class ModelEndpoint(ConfigurableResource):
    model_name: str | None = None
    base_url: str | None = None
    api_key: str | None = None

    @classmethod
    def from_env(cls) -> Self:
        return cls(**{field: EnvVar(name) for field, name in VARIABLES.items() if os.environ.get(name)})

    def overrides(self) -> dict[str, Any]:
        """A config patch for the fields that are set."""
        model: dict[str, Any] = {"model_name": self.model_name} if self.model_name else {}
        kwargs = {k: v for k, v in (("base_url", self.base_url), ("api_key", self.api_key)) if v}
        if kwargs:
            model["model_kwargs"] = kwargs
        return {"model": model} if model else {}
