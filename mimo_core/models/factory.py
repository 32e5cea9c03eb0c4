"""`make_model(cfg)`: the one place a protocol name becomes a Model. SDKs are imported only here, lazily."""

from __future__ import annotations

from mimo_core.config import ModelConfig
from mimo_core.errors import ModelAuthError
from mimo_core.models.protocol import ProtocolModel


def make_model(cfg: ModelConfig) -> ProtocolModel:
    """Build the model client for `cfg.protocol` (chat | responses | anthropic)."""
    if cfg.protocol == "chat":
        from mimo_core.models.chat import make_chat_model as make
    elif cfg.protocol == "responses":
        from mimo_core.models.responses import make_responses_model as make
    elif cfg.protocol == "anthropic":
        from mimo_core.models.anthropic import make_anthropic_model as make
    else:  # ModelConfig validation already restricts this; kept for configs built with model_construct
        raise ValueError(f"model.protocol: unknown protocol {cfg.protocol!r} (chat | responses | anthropic)")
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
