"""Error classes shared by every layer. Each maps to exactly one ExitStatus (`status`), so the rollout that
catches one records the same status whichever layer raised it."""

from __future__ import annotations

from typing import ClassVar

from mimo_core.status import ExitStatus


class MimoError(Exception):
    """Base class for every error mimoagent raises on purpose."""

    status: ClassVar[ExitStatus] = ExitStatus.INTERNAL_ERROR


class ConfigError(MimoError):
    """A config file, override or CLI flag is invalid. The message names the file and the dotted path."""

    status = ExitStatus.CONFIG_ERROR


class DatasetError(MimoError):
    """A dataset row is invalid. The message names the file, the row and the field."""

    status = ExitStatus.DATASET_ERROR


class UnknownSchemaError(MimoError):
    """A file of a schema_version this code does not read (a newer mimoagent wrote it). Never repaired or
    rewritten, so the newer fields are not lost; the message names the file and the line."""


class SandboxError(MimoError):
    """The sandbox failed (could not start, crashed, lost). An infrastructure error, retried on resume."""

    status = ExitStatus.ENVIRONMENT_ERROR


class ModelError(MimoError):
    """Base for errors from a model endpoint; `status` is the rollout's exit status when it ends one.

    `request` / `request_json` / `response` hold the failing call (credentials scrubbed), so the agent can
    save it beside the successful ones."""

    status = ExitStatus.MODEL_ERROR
    request: dict | None = None
    request_json: str | None = None
    response: dict | None = None


class ModelAuthError(ModelError):
    status = ExitStatus.MODEL_AUTH_ERROR


class ModelBadRequestError(ModelError):
    status = ExitStatus.MODEL_BAD_REQUEST


class ContextWindowError(ModelError):
    status = ExitStatus.CONTEXT_WINDOW


class ModelEndpointError(ModelError):
    """No such endpoint or model (HTTP 404/405): a setup problem, reported at once and never graded as the
    model's 0; a rerun does the rollout again."""


class ModelInterrupted(ModelError):
    """The run was stopped (Ctrl-C / SIGTERM) while a model call was in flight."""

    status = ExitStatus.INTERRUPTED


class ModelRetriesExhausted(ModelError):
    """The endpoint kept failing with retryable errors (429/5xx/timeouts/connection) until attempts ran out."""


def status_of(error: BaseException) -> ExitStatus:
    """The status a rollout ends with when `error` stops it: anything not raised on purpose is a bug."""
    return error.status if isinstance(error, MimoError) else ExitStatus.INTERNAL_ERROR
