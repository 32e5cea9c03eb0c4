"""Jinja rendering with StrictUndefined: an undefined variable is an error, never an empty string."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2
from jinja2 import meta

from mimo_core.errors import ConfigError

_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)


@lru_cache(maxsize=256)
def _compile(source: str) -> jinja2.Template:
    """Compiled once per distinct template: recompiling every step costs ~1.5 ms."""
    return _ENV.from_string(source)


def prompt_cwd(env: Any) -> str:
    """The working directory as the task declares it (`/app`), never the host folder a local sandbox maps
    it to (`/tmp/mimo-…/work`): host paths stay out of what the model sees."""
    from mimo_core.datasets.paths import TASK_CWD_LABEL

    return env.spec.labels.get(TASK_CWD_LABEL) or getattr(env, "task_cwd", None) or env.spec.cwd


def render(source: str, variables: dict[str, Any], where: str) -> str:
    try:
        return _compile(source).render(**variables)
    except jinja2.UndefinedError as e:
        raise ConfigError(f"{where}: {e.message}; available: {sorted(variables)}") from None
    except jinja2.TemplateSyntaxError as e:
        raise ConfigError(f"{where}: template syntax error at line {e.lineno}: {e.message}") from None


def check_syntax(source: str, where: str) -> None:
    """Compile now, so a syntax error is reported when the config loads, not in every rollout."""
    try:
        _compile(source)
    except jinja2.TemplateSyntaxError as e:
        raise ConfigError(f"{where}: template syntax error at line {e.lineno}: {e.message}") from None


def variables_used(source: str) -> set[str]:
    """Top-level names the template reads (attributes of them are checked only when rendering)."""
    return meta.find_undeclared_variables(_ENV.parse(source))
