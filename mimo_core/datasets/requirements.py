"""What a row needs before any sandbox starts, checked at plan time and again by each rollout.

An infrastructure or configuration problem must never be recorded as the model's 0: a row that needs
its image cannot be run on the host, and a row whose verifier files are missing cannot be graded.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from mimo_core.config import EnvironmentConfig, MimoConfig, NamedConfig
from mimo_core.datasets.base import Task
from mimo_core.errors import ConfigError, MimoError, SandboxError
from mimo_core.status import ExitStatus

HOST_SWITCH = "environment.run_image_tasks_on_host: true"
log = logging.getLogger("mimoagent")


class UngradableTask(MimoError):
    """The row can never be graded as it is (missing verifier files): a grading_error, nothing run."""

    status = ExitStatus.GRADING_ERROR


def needs_image(task: Task) -> str | None:
    """Why the row cannot run without its image, or None.

    A row that names an image or a Dockerfile needs it, unless the row brings its starting files itself
    (`repo_archive`, `repo_dir` — a Harbor task's `environment/repo/` — or a `setup_script`): that is how
    a task says it also runs on a plain host.
    """
    image, dockerfile = task.image, getattr(task, "dockerfile_dir", None)
    if not image and not dockerfile:
        return None
    if any(getattr(task, f, None) for f in ("repo_archive", "repo_dir", "setup_script")):
        return None
    return f"its image {image!r}" if image else f"the image built from {dockerfile}/Dockerfile"


def cwd_problem(task: Task, env: EnvironmentConfig) -> str | None:
    """A one-line error when the configured backend cannot give the row its working directory."""
    from mimo_core.datasets.registry import get_dataset_type
    from mimo_core.environments.registry import environment_class

    check = getattr(environment_class(env.environment_class), "cwd_problem", None)
    if check is None:
        return None
    key = "cwd" if task.cwd else "environment.cwd" if env.cwd else None
    cwd = task.cwd or env.cwd or getattr(get_dataset_type(task.dataset_type), "default_cwd", None)
    problem = check(env, cwd) if cwd else None
    if problem is None:
        return None
    return f"row {task.instance_id}: {key + ' ' if key else ''}{cwd}: {problem}"


def backend_problem(task: Task, env: EnvironmentConfig) -> str | None:
    """A one-line error when the row cannot run on the configured backend."""
    from mimo_core.environments.registry import capabilities

    if (problem := cwd_problem(task, env)) is not None:
        return problem
    if env.run_image_tasks_on_host or capabilities(env).image_tasks:
        return None
    need = needs_image(task)
    if need is None:
        return None
    return (
        f"row {task.instance_id} needs {need} (its repository and verifier live there), which "
        f"environment_class {env.environment_class} cannot start; use environment_class: docker, or set "
        f"{HOST_SWITCH} to run it on the host anyway"
    )


def grading_problem(task: Task) -> str | None:
    """Why the row can never be graded (files its verifier needs are missing), or None."""
    missing = getattr(task, "verifier_files_missing", None)
    if missing:
        return f"the task's verifier files are missing ({', '.join(missing)}): it cannot be graded"
    return None


def check_runnable(pairs: Iterable[tuple[Task, NamedConfig]]) -> None:
    """Plan time: every row that cannot run on its config's backend, in one error (exit 2); a warning
    per row that can never be graded (it is still recorded, as a grading_error)."""
    problems: dict[str, Any] = {}
    ungradable: set[str] = set()
    for task, config in pairs:
        problem = backend_problem(task, config.config.environment)
        if problem and task.instance_id not in problems:
            problems[task.instance_id] = f"config {config.name}: {problem}"
        reason = grading_problem(task)
        if reason and task.instance_id not in ungradable:
            ungradable.add(task.instance_id)
            log.warning("row %s: %s; its rollouts are recorded as grading_error", task.instance_id, reason)
    if len(problems) == 1:
        raise ConfigError(next(iter(problems.values())))
    if problems:
        lines = list(problems.values())
        shown = lines[:20] + ([f"... and {len(lines) - 20} more"] if len(lines) > 20 else [])
        raise ConfigError(f"{len(lines)} row(s) cannot run on their backend:\n" + "\n".join(shown))


def preflight(task: Task, config: MimoConfig) -> None:
    """Each rollout, before any sandbox: the same rules as plan time, for callers that skip planning."""
    if (problem := grading_problem(task)) is not None:
        raise UngradableTask(problem)
    if (problem := backend_problem(task, config.environment)) is not None:
        raise SandboxError(problem)
