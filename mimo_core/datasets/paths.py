"""Map a task's absolute container paths (/app, /logs, /tests, /solution) onto the real sandbox.

In a container the task's paths are real and the map is the identity. The local backend puts the task's
cwd in a fresh host folder, so there the cwd maps to `env.spec.cwd` and the other roots to folders under
`env.scratch_dir`; commands, scripts and hooks written for containers are rewritten through the map.
"""

from __future__ import annotations

import re

from mimo_core.environments.base import Environment

TASK_ROOTS = ("/logs", "/tests", "/solution")
TASK_CWD_LABEL = "mimo.task_cwd"


class PathMap:
    def __init__(self, task_cwd: str, real_cwd: str, scratch_dir: str):
        self.task_cwd = task_cwd
        self.real_cwd = real_cwd
        self.identity = task_cwd.rstrip("/") == real_cwd.rstrip("/")
        self.mapping: dict[str, str] = {}
        if not self.identity:
            self.mapping[task_cwd.rstrip("/") or "/"] = real_cwd.rstrip("/")
            for root in TASK_ROOTS:
                self.mapping[root] = scratch_dir.rstrip("/") + root
        roots = sorted(self.mapping, key=len, reverse=True)
        self._pattern = (
            re.compile(r"(?<![\w.\-/$])(" + "|".join(re.escape(r) for r in roots) + r")(?![\w.\-])")
            if roots and "/" not in roots
            else None
        )

    def path(self, path: str) -> str:
        """One absolute task path → the sandbox path."""
        for root in sorted(self.mapping, key=len, reverse=True):
            if path == root or path.startswith(root + "/"):
                return self.mapping[root] + path[len(root) :]
        return path

    def text(self, text: str) -> str:
        """Rewrite every task path inside a command or a script."""
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda m: self.mapping[m.group(1)], text)

    def env_vars(self) -> dict[str, str]:
        """Also exported to scripts, so new tasks can avoid hard-coded paths altogether."""
        return {
            "TASK_CWD": self.real_cwd,
            "LOGS_DIR": self.path("/logs"),
            "TESTS_DIR": self.path("/tests"),
            "SOLUTION_DIR": self.path("/solution"),
        }


def path_map(env: Environment, task_cwd: str) -> PathMap:
    declared = env.spec.labels.get(TASK_CWD_LABEL, task_cwd)
    return PathMap(declared, env.spec.cwd, env.scratch_dir)
