"""Retries for model calls: exponential backoff with full jitter, `Retry-After` honoured, bounded attempts.

Transient failures (429, 5xx, connection errors, timeouts) are retried; failures that would fail the
same way again (auth, bad request, context window) are mapped to their own error class at once, since
each ends the rollout with its own exit status. Works on both SDKs' exception types by duck typing, so
this module imports neither.
"""

from __future__ import annotations

import email.utils
import random
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

from mimo_core.config import RetryConfig
from mimo_core.errors import (
    ContextWindowError,
    ModelAuthError,
    ModelBadRequestError,
    ModelError,
    ModelRetriesExhausted,
)

T = TypeVar("T")

_CONTEXT_WORDING = re.compile(
    r"context[_ ]length|context[_ ]window|maximum context|prompt is too long|too many tokens"
    r"|input is too long|exceeds the model's|reduce the length",
    re.I,
)
_CONNECTION_CLASSES = frozenset({"APIConnectionError", "APITimeoutError"})


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) and getattr(exc, "response", None) is not None else None


def _is_connection_error(exc: BaseException) -> bool:
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    return any(c.__name__ in _CONNECTION_CLASSES for c in type(exc).__mro__)


def _error_text(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    return f"{exc} {body!r}" if body is not None else str(exc)


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (`retry-after-ms`, `retry-after` seconds or HTTP date)."""
    response = getattr(exc, "response", None)
    headers: Any = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(parsed.timestamp() - time.time(), 0.0)


def classify(exc: BaseException, model: str) -> ModelError | None:
    """Map an SDK exception to a final error, or None if it is worth retrying."""
    status = _status(exc)
    if status is None:
        return None if _is_connection_error(exc) else ModelError(f"model {model}: {type(exc).__name__}: {exc}")
    text = _error_text(exc)
    short = text if len(text) <= 500 else text[:500] + "..."
    if status in (400, 413, 422) and _CONTEXT_WORDING.search(text):
        return ContextWindowError(f"model {model}: context window exceeded (HTTP {status}): {short}")
    if status in (401, 403):
        return ModelAuthError(f"model {model}: authentication failed (HTTP {status}): {short}")
    if status == 408 or status == 409 or status == 429 or status >= 500:
        return None
    return ModelBadRequestError(f"model {model}: request rejected (HTTP {status}): {short}")


def backoff(attempt: int, cfg: RetryConfig) -> float:
    """Full jitter: uniform in [0, min(max_delay, initial_delay * 2**(attempt-1))]."""
    return random.uniform(0.0, min(cfg.max_delay, cfg.initial_delay * (2 ** (attempt - 1))))


def call_with_retry(fn: Callable[[], T], cfg: RetryConfig, model: str,
                    sleep: Callable[[float], None] = time.sleep) -> tuple[T, int]:
    """Run `fn` until it succeeds; return (result, attempts). Raises a ModelError subclass otherwise."""
    attempts = max(cfg.max_attempts, 1)
    last: BaseException | None = None
    for attempt in range(1, attempts + 1):
        try:
            return fn(), attempt
        except Exception as exc:  # noqa: BLE001 - every SDK failure is classified below
            final = classify(exc, model)
            if final is not None:
                raise final from exc
            last = exc
        if attempt < attempts:
            wait = retry_after(last)
            sleep(min(wait, cfg.max_delay) if wait is not None else backoff(attempt, cfg))
    status = _status(last) if last is not None else None
    what = f"HTTP {status}" if status is not None else type(last).__name__
    raise ModelRetriesExhausted(f"model {model}: gave up after {attempts} attempts (last: {what}: {last})") from last
