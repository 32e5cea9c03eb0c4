"""Credentials a model client holds, and scrubbing them out of text before it is written anywhere.

A provider's 401 body often echoes the key it was sent; the SDK's exception message carries that body.
Scrubbing happens where the error is raised, so results.jsonl, traj.json, instance.log, agent_msgs/ and
the Dagster event log all receive text that never held the key.
"""

from __future__ import annotations

import re
from typing import Any

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
    for s in secrets:
        if s in text:
            text = text.replace(s, REDACTED)
    return text


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
