"""The one status vocabulary: how a rollout ended, as written to traj.json and results.jsonl alike.

Each status belongs to at most one of two sets that decide what a resume does with a rollout:
infrastructure statuses are done again on every resume; statuses that are the input's fault (a config or
row that cannot work) are done again only when the input changed. Every other status is final.
"""

from __future__ import annotations

from enum import StrEnum


class ExitStatus(StrEnum):
    SUBMITTED = "submitted"  # the agent called submit (or the CLI agent exited 0)
    STEP_LIMIT = "step_limit"
    COST_LIMIT = "cost_limit"
    TIME_LIMIT = "time_limit"
    CONTEXT_WINDOW = "context_window"  # the prompt outgrew the model's window
    FORMAT_ERRORS = "format_errors"  # too many consecutive malformed tool calls
    MODEL_ERROR = "model_error"  # endpoint unreachable / kept failing after retries
    MODEL_AUTH_ERROR = "model_auth_error"  # bad credentials: fix the config, retrying won't help
    MODEL_BAD_REQUEST = "model_bad_request"  # the endpoint rejected the request
    # The endpoint refused the agent's first request, before the agent acted (its prompt outgrew the
    # window, a field the server does not take): the setup does not fit this endpoint; not graded.
    REQUEST_REFUSED = "request_refused"
    ENVIRONMENT_ERROR = "environment_error"  # the sandbox failed
    GRADING_ERROR = "grading_error"  # the verifier crashed or wrote no reward
    AGENT_ERROR = "agent_error"  # the agent could not act (a CLI agent crashed, a reference did not apply)
    INTERNAL_ERROR = "internal_error"  # a bug in mimoagent
    CONFIG_ERROR = "config_error"  # the config does not fit this row (e.g. an undefined template variable)
    DATASET_ERROR = "dataset_error"  # the row itself cannot run (e.g. its repository folder is missing)
    INTERRUPTED = "interrupted"  # the run was stopped (Ctrl-C, SIGTERM) before this rollout finished
    RECALCULATED = "recalculated"  # no agent ran: a saved or reference submission was graded


# Not the rollout's outcome but the machinery's: a resume does these rollouts again.
# A rejected key is the setup's fault, never the model's 0: fixed keys usually arrive through the environment,
# which the input fingerprint does not see, so it is done again on every resume.
INFRA_STATUSES = frozenset(
    {
        ExitStatus.MODEL_ERROR,
        ExitStatus.ENVIRONMENT_ERROR,
        ExitStatus.GRADING_ERROR,
        ExitStatus.INTERNAL_ERROR,
        ExitStatus.INTERRUPTED,
        ExitStatus.MODEL_AUTH_ERROR,
    }
)
# The input's fault: the same config on the same row fails the same way, so a resume does these again only
# when the config or the row changed (compared by ResultRecord.input_fingerprint).
INPUT_STATUSES = frozenset({ExitStatus.CONFIG_ERROR, ExitStatus.DATASET_ERROR, ExitStatus.REQUEST_REFUSED})
# No grade is worth taking after these: the agent never got to act on a working setup.
UNGRADED_STATUSES = INFRA_STATUSES | INPUT_STATUSES


def parse_statuses(text: str) -> list[ExitStatus]:
    """`model_error,grading_error` as statuses; ValueError naming the unknown ones and the known ones."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    known = [s.value for s in ExitStatus]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(f"unknown exit status {', '.join(unknown) or repr(text)}; known: {', '.join(known)}")
    return [ExitStatus(n) for n in names]
