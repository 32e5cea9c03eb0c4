"""Backends by name, and what each can do.

Callers never test a backend's name: they ask its `capabilities(config)` (a `Capabilities`), so a
backend of your own (a `mimoagent.environments` entry point, or `environment_class: package.module:Class`)
is treated by what it declares. The names are `mimo_core/plugins.py`'s; the classes are imported lazily, so
`local` users never pay for the docker or kubernetes clients.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mimo_core import plugins
from mimo_core.environments.base import Capabilities, Environment, SandboxSpec

if TYPE_CHECKING:
    from mimo_core.config import EnvironmentConfig

# A backend that declares nothing: assume it can start images, confines nothing and shares no host files.
UNDECLARED = Capabilities(
    host_files=False, image_tasks=True, confined=False, network_isolation=False, host_mounts=False
)


def environment_class(name: str) -> type:
    """The class behind `environment_class: name` (a plug-in's name or "package.module:Class"); an unknown
    name is a ValueError listing the known ones."""
    return plugins.lookup("environments", name)


def capabilities(config: EnvironmentConfig) -> Capabilities:
    """What the configured backend can do, with these settings (e.g. `sandbox: bwrap` confines local)."""
    declared = getattr(environment_class(config.environment_class), "capabilities", None)
    return declared(config) if declared is not None else UNDECLARED


def make_environment(config: EnvironmentConfig, spec: SandboxSpec, **extra: Any) -> Environment:
    cls = environment_class(config.environment_class)
    return cls(spec=spec, config=config, **extra)
