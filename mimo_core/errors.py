"""Error classes shared by every layer, so exit statuses and infra/solution failures stay distinct."""

from __future__ import annotations


class MimoError(Exception):
    """Base class for every error mimoagent raises on purpose."""


class ConfigError(MimoError):
    """A config file, override or CLI flag is invalid. The message names the file and the dotted path."""


class DatasetError(MimoError):
    """A dataset row is invalid. The message names the file, the row and the field."""


class SandboxError(MimoError):
    """The sandbox failed (could not start, crashed, lost). An infrastructure error, retried on resume."""


class ModelError(MimoError):
    """Base for errors from a model endpoint. `exit_status` is the rollout's exit status when it ends one.

    `request` / `request_json` / `response` hold the failing call (credentials scrubbed), so the agent can
    save it beside the successful ones."""

    exit_status = "model_error"
    infra = True
    request: dict | None = None
    request_json: str | None = None
    response: dict | None = None


class ModelAuthError(ModelError):
    exit_status = "model_auth_error"
    infra = False


class ModelBadRequestError(ModelError):
    exit_status = "model_bad_request"
    infra = False


class ContextWindowError(ModelError):
    exit_status = "context_window"
    infra = False


class ModelEndpointError(ModelError):
    """No such endpoint or model (HTTP 404/405): a setup problem, reported at once and never graded as the
    model's 0; a rerun does the rollout again."""

    exit_status = "model_error"
    infra = True


class ModelInterrupted(ModelError):
    """The run was stopped (Ctrl-C / SIGTERM) while a model call was in flight."""

    exit_status = "interrupted"
    infra = True


class ModelRetriesExhausted(ModelError):
    """The endpoint kept failing with retryable errors (429/5xx/timeouts/connection) until attempts ran out."""

    exit_status = "model_error"
    infra = True


class GradingError(MimoError):
    """The verifier crashed or wrote no reward: an infrastructure error, not a failed solution."""
