"""Where a model block's requests go, read from the config alone: no SDK import, no client.

The trajectory records `endpoint_host` (host[:port], never the URL: a URL may carry credentials as
userinfo or in its query); the CLI agents' proxy needs the base URL and key. Both follow what each SDK does
when the config names no base URL: its environment variable, else the provider's public endpoint.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from mimo_core.config import ModelConfig

# protocol -> (base URL variable, default base URL, key variable), as the protocol's SDK resolves them
DEFAULT_ENDPOINTS = {
    "anthropic": ("ANTHROPIC_BASE_URL", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    "gemini": ("GEMINI_BASE_URL", "https://generativelanguage.googleapis.com", "GEMINI_API_KEY"),
    "chat": ("OPENAI_BASE_URL", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "responses": ("OPENAI_BASE_URL", "https://api.openai.com/v1", "OPENAI_API_KEY"),
}


def base_url(model: ModelConfig, protocol: str | None = None) -> str:
    url_var, default_url, _ = DEFAULT_ENDPOINTS[protocol or model.protocol]
    return str(model.model_kwargs.get("base_url") or os.environ.get(url_var) or default_url)


def api_key(model: ModelConfig, protocol: str | None = None) -> str:
    _, _, key_var = DEFAULT_ENDPOINTS[protocol or model.protocol]
    kwargs = model.model_kwargs
    return str(kwargs.get("api_key") or kwargs.get("auth_token") or os.environ.get(key_var) or "")


def host_of(url: object) -> str:
    """host[:port] of a URL, without any userinfo (`user:secret@`), path or query."""
    parts = urlsplit(str(url))
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:  # a malformed port: the host alone
        port = None
    return f"{host}:{port}" if port else host


def endpoint_host(model: ModelConfig) -> str | None:
    return host_of(base_url(model)) or None
