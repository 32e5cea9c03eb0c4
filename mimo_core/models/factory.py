"""`make_model(cfg)`: the one place a protocol name becomes a Model. The protocols are plug-ins
(`mimo_core/plugins.py`: a function ModelConfig -> Model each); SDKs are imported only then, lazily."""

from __future__ import annotations

from mimo_core import plugins
from mimo_core.config import ModelConfig
from mimo_core.errors import ModelAuthError
from mimo_core.models.protocol import ProtocolModel


def make_model(cfg: ModelConfig) -> ProtocolModel:
    """Build the model client for `cfg.protocol` (chat | responses | anthropic | a plug-in's)."""
    try:
        make = plugins.lookup("protocols", cfg.protocol)
    except ValueError as e:  # ModelConfig validation already refuses it; kept for configs built with model_construct
        raise ValueError(f"model.protocol: {e}") from None
    try:
        return make(cfg)
    except Exception as e:
        # The SDKs refuse to build a client without a key; say which model and where to put it.
        if "api_key" in str(e) or "auth" in str(e).lower():
            raise ModelAuthError(
                f"model {cfg.model_name} ({cfg.protocol}): no API key: set model.model_kwargs.api_key or the "
                f"SDK's environment variable ({e})"
            ) from None
        raise


def no_gemini_client(cfg: ModelConfig) -> ProtocolModel:
    """`protocol: gemini` has no client of ours: only the gemini-cli agent speaks it."""
    raise ValueError(f"model.protocol: {cfg.protocol!r} has no model client here: only agent.type gemini-cli speaks it")
