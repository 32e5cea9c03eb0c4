"""How mimoagent runs git on a task's repository: a fixed identity and dates, so the base commit's
hash depends only on the tree and runs are reproducible; the ref that marks the task's base."""

from __future__ import annotations

BASE_REF = "refs/mimo/base"
# No hooks and no fsmonitor: a repository the agent configured must not run its code when we commit or diff.
GIT = ("git -c user.name=mimoagent -c user.email=mimoagent@localhost -c commit.gpgsign=false "
       "-c safe.directory='*' -c core.hooksPath=/dev/null -c core.fsmonitor=false")
GIT_ENV = {"GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"}
