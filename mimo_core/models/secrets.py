"""Credentials a model client holds, and scrubbing them out of text where an error is raised.

A provider's 401 body often echoes the key it was sent; the SDK's exception message carries that body.
Every writer also redacts what it writes (mimo_core/base/redaction.py, where the client's secrets are
registered), in every encoding a key travels in; scrubbing here as well keeps the key out of exception
messages that reach a console or a caller's own logs.
"""

from __future__ import annotations

import re
from typing import Any

from mimo_core.base.redaction import redact, register

REDACTED = "***"
_SECRET_HEADER = re.compile(r"(api[_-]?key|token|secret|authorization|credential)", re.I)
_MIN_SECRET = 6  # shorter values (e.g. "k", "none") would scrub ordinary words


def client_secrets(client: Any) -> tuple[str, ...]:
    """The key/token values the SDK client sends (resolved from config or the SDK's environment variables)."""
    found: list[str] = []
    for attr in ("api_key", "auth_token"):
        value = getattr(client, attr, None)
        if isinstance(value, str):
            found.append(value)
    headers = getattr(client, "_custom_headers", None) or {}
    for name, value in headers.items():
        if isinstance(value, str) and _SECRET_HEADER.search(str(name)):
            found.append(value.removeprefix("Bearer ").strip())
    return tuple(sorted({s for s in found if len(s) >= _MIN_SECRET}, key=len, reverse=True))


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """`text` without `secrets` (and every other registered one) in any encoding redaction knows."""
    register(secrets)
    return redact(text)


def scrub_data(data: Any, secrets: tuple[str, ...]) -> Any:
    """`scrub` applied to every string of a JSON-like value."""
    if not secrets:
        return data
    if isinstance(data, str):
        return scrub(data, secrets)
    if isinstance(data, dict):
        return {k: scrub_data(v, secrets) for k, v in data.items()}
    if isinstance(data, list):
        return [scrub_data(v, secrets) for v in data]
    return data
