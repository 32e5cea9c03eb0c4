"""Retries for model calls: exponential backoff with full jitter, `Retry-After` honoured, bounded attempts.

Transient failures (429, 5xx, connection errors, timeouts, an HTTP 200 whose body is not a usable reply)
are retried; failures that would fail the same way again (auth, bad request, no such endpoint, context
window, a 4xx/5xx whose body is the server's request-validation error) are mapped to their own error
class at once, since each ends the rollout with its own exit status. Every message is scrubbed of the
client's credentials before it leaves this module. Works on both SDKs' exception types by duck typing,
so this module imports neither.
"""

from __future__ import annotations

import email.utils
import json
import random
import re
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from mimo_core.config import RetryConfig
from mimo_core.errors import (
    ContextWindowError,
    ModelAuthError,
    ModelBadRequestError,
    ModelEndpointError,
    ModelError,
    ModelInterrupted,
    ModelRetriesExhausted,
)
from mimo_core.models.secrets import scrub

T = TypeVar("T")

# Context overflow in each provider's words: OpenAI/vLLM ("maximum context length", code
# context_length_exceeded), SGLang ("is longer than the model's context length"), llama.cpp (HTTP 400
# exceed_context_size_error: "exceeds the available context size"), Anthropic ("prompt is too long",
# "exceed context limit").
_CONTEXT_WORDING = re.compile(
    r"context[_ ]length|context[_ ]window|maximum context|prompt is too long|too many tokens"
    r"|input is too long|exceeds the model's|reduce the length|exceed_context_size|context size"
    r"|exceed context limit",
    re.I,
)
# What pydantic/FastAPI servers (llama-cpp-python, vLLM, SGLang...) say when the request body fails
# their schema. Such a request fails the same way every time, whatever the status code (some say 500).
# llama.cpp says "Failed to parse tool call arguments as JSON" / "Failed to parse messages" with a 500.
_VALIDATION_WORDING = re.compile(
    r"validation error|Input should be|Field required|field required|Extra inputs are not permitted"
    r"|is not of type|string_type|missing_argument|\"loc\"\s*:|Failed to parse (tool call|messages)",
)
_CONNECTION_CLASSES = frozenset({"APIConnectionError", "APITimeoutError"})


class UnusableReply(Exception):
    """An HTTP 200 whose body is not a reply of the protocol (an HTML page from a proxy, JSON without
    choices): the endpoint's fault, so it is retried like a 5xx and ends as `model_error`."""


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) and getattr(exc, "response", None) is not None else None


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an SDK exception carries (None: no answer, or not an HTTP error)."""
    return _status(exc)


def _is_connection_error(exc: BaseException) -> bool:
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    return any(c.__name__ in _CONNECTION_CLASSES for c in type(exc).__mro__)


def _error_text(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    return f"{exc} {body!r}" if body is not None else str(exc)


def server_message(exc: BaseException) -> str:
    """The server's own words: `error.message` / FastAPI's `detail`, else the exception text."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
        if body.get("detail"):
            return (
                json.dumps(body["detail"], ensure_ascii=False)
                if not isinstance(body["detail"], str)
                else body["detail"]
            )
    return str(exc)


def error_body(exc: BaseException, secrets: tuple[str, ...] = ()) -> dict[str, Any]:
    """What a failing call's record keeps as its response: status and the server's body, scrubbed."""
    body = getattr(exc, "body", None)
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, default=str)
    return {
        "error": {
            "status": _status(exc),
            "type": type(exc).__name__,
            "message": _short(scrub(str(exc), secrets), 2000),
            "body": _short(scrub(text, secrets), 20000) if body is not None else None,
        }
    }


def _short(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


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


def classify(exc: BaseException, model: str, secrets: tuple[str, ...] = ()) -> ModelError | None:
    """Map an SDK exception to a final error, or None if it is worth retrying."""
    if isinstance(exc, UnusableReply):
        return None
    status = _status(exc)
    if status is None:
        if _is_connection_error(exc):
            return None
        return ModelError(scrub(f"model {model}: {type(exc).__name__}: {exc}", secrets))
    text = scrub(_error_text(exc), secrets)
    short = _short(text)
    if is_context_overflow(status, text):
        said = _short(scrub(server_message(exc), secrets))
        return ContextWindowError(f"model {model}: context window exceeded (HTTP {status}): {said}")
    if status in (401, 403):
        return ModelAuthError(f"model {model}: authentication failed (HTTP {status}): {short}")
    if status in (404, 405):
        return ModelEndpointError(
            f"model {model}: no such endpoint or model (HTTP {status}); check model.model_kwargs.base_url and "
            f"model.model_name: {short}"
        )
    if status >= 400 and _VALIDATION_WORDING.search(text):
        said = _short(scrub(server_message(exc), secrets))
        return ModelBadRequestError(f"model {model}: the server rejected the request body (HTTP {status}): {said}")
    if status == 408 or status == 409 or status == 429 or status >= 500:
        return None
    return ModelBadRequestError(f"model {model}: request rejected (HTTP {status}): {short}")


def is_context_overflow(status: int, text: str) -> bool:
    """An HTTP error whose text says the prompt outgrew the model's window (any provider's wording)."""
    return status in (400, 413, 422) and _CONTEXT_WORDING.search(text) is not None


def backoff(attempt: int, cfg: RetryConfig) -> float:
    """Full jitter: uniform in [0, min(max_delay, initial_delay * 2**(attempt-1))]."""
    return random.uniform(0.0, min(cfg.max_delay, cfg.initial_delay * (2 ** (attempt - 1))))


def call_with_retry(
    fn: Callable[[], T],
    cfg: RetryConfig,
    model: str,
    sleep: Callable[[float], None] = time.sleep,
    secrets: tuple[str, ...] = (),
    cancel: threading.Event | None = None,
) -> tuple[T, int]:
    """Run `fn` until it succeeds; return (result, attempts). Raises a ModelError subclass otherwise;
    `ModelInterrupted` as soon as `cancel` is set (the wait between attempts is cut short too)."""
    attempts = max(cfg.max_attempts, 1)
    last: BaseException | None = None
    for attempt in range(1, attempts + 1):
        try:
            return fn(), attempt
        except ModelError:
            raise
        except Exception as exc:
            final = classify(exc, model, secrets)
            if final is not None:
                final.response = error_body(exc, secrets)
                raise final from None
            last = exc
        if attempt < attempts:
            wait = retry_after(last)
            delay = min(wait, cfg.max_delay) if wait is not None else backoff(attempt, cfg)
            if cancel is None:
                sleep(delay)
            elif cancel.wait(delay):
                raise ModelInterrupted(f"model {model}: interrupted while waiting to retry")
    status = _status(last) if last is not None else None
    what = f"HTTP {status}" if status is not None else type(last).__name__
    cause = f" ({last.__cause__})" if last is not None and last.__cause__ is not None else ""
    err = ModelRetriesExhausted(
        scrub(f"model {model}: gave up after {attempts} attempts (last: {what}: {last}{cause})", secrets)
    )
    if last is not None:
        err.response = error_body(last, secrets)
    raise err from None
