"""How mimoagent runs git on a task's repository: a fixed identity and dates, so the base commit's
hash depends only on the tree and runs are reproducible; the ref that marks the task's base."""

from __future__ import annotations

BASE_REF = "refs/mimo/base"
# No hooks and no fsmonitor: a repository the agent configured must not run its code when we commit or diff.
GIT = (
    "git -c user.name=mimoagent -c user.email=mimoagent@localhost -c commit.gpgsign=false "
    "-c safe.directory='*' -c core.hooksPath=/dev/null -c core.fsmonitor=false"
)
# Grading's git reads no configuration but the repository's own (which grading puts back to the task's
# first: datasets/tamper.py), no replace refs and no system attributes, and never prompts.
HERMETIC_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
}
HERMETIC_GIT = GIT + " -c core.attributesFile=/dev/null"
GIT_ENV = {"GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z", **HERMETIC_GIT_ENV}
