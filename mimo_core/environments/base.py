"""The Environment seam. Every tool and every grader acts only through it, so each agent and dataset type
runs on every backend (local, docker, kubernetes, ...)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from mimo_core.config import EnvironmentConfig


# The labels every sandbox carries (SandboxSpec.labels): what cleanup and names are derived from.
LABEL_RUN_ID = "mimoagent.run_id"
LABEL_INSTANCE = "mimoagent.instance"
LABEL_CONFIG = "mimoagent.config"
LABEL_ROLLOUT = "mimoagent.rollout"


class SandboxSpec(BaseModel):
    """What one rollout's sandbox must look like, derived from the task row and the config."""

    image: str | None = None  # already prefixed with environment.image_prefix
    cwd: str = "/testbed"
    env: dict[str, str] = Field(default_factory=dict)
    timeout: float = 300.0  # default per-command timeout
    cpus: float | None = None
    memory_mb: int | None = None
    pids_limit: int | None = None
    network: bool = True  # False: no network at all
    labels: dict[str, str] = Field(default_factory=dict)  # run id, instance, config: for cleanup
    dockerfile_dir: str | None = None  # build context used when `image` is absent or unavailable
    build_timeout: float | None = None  # seconds to build it (the task's own); None: environment.startup_timeout
    seed_dir: str | None = None  # host folder copied into `cwd` before setup (local repos)
    # Host folders shown read-only inside (host path -> sandbox path): shared installs such as the CLI
    # agents' cache. Backends that share the host's files, or cannot mount them, ignore it.
    mounts: dict[str, str] = Field(default_factory=dict)


class ExecResult(BaseModel):
    output: str  # stdout and stderr interleaved
    returncode: int
    timed_out: bool = False
    duration_s: float = 0.0


class Environment(Protocol):
    spec: SandboxSpec
    scratch_dir: str  # a framework-owned folder inside the sandbox, outside `cwd`

    def start(self) -> None: ...

    def execute(
        self, command: str, timeout: float | None = None, cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        """Run `command` with bash (not a login shell). A timeout kills it; the sandbox keeps working."""
        ...

    def read_file(self, path: str) -> bytes: ...

    def write_file(self, path: str, data: bytes, mode: int | None = None) -> None:
        """Create parent folders; `mode=None` keeps an existing file's mode (new files: 0644)."""
        ...

    def copy_in(self, src: Path, dest: str) -> None:
        """Copy a host file or folder to `dest` in the sandbox (folders: their contents into `dest`)."""
        ...

    def copy_out(self, src: str, dest: Path) -> None: ...

    def stop(self) -> None:
        """Release everything. Idempotent; safe after a failed start."""
        ...


class PersistentShells(Protocol):
    """Optional, on top of `Environment`: what a backend offers for the bash tool's long-lived shells.

    The protocol itself is backend-neutral (shell.py's `ShellSession`); a backend (local, bwrap, docker,
    and the same way Kubernetes' exec websocket) provides `open_shell_stream`, `kill_call`, `read_output`
    and `inline_output` (see shell.py's `ShellHost`) and keeps one session per name. Backends without it
    get the bash tool's emulation over `execute`.
    """

    def shell(self, name: str = "main") -> Any:
        """The rollout's persistent shell called `name` (a `ShellSession`), started on first use."""
        ...

    def interrupt(self) -> None:
        """Kill every running command of the sandbox now; callable from any thread (a stopping runner)."""
        ...


_BACKENDS = {
    "local": "mimo_core.environments.local:LocalEnvironment",
    "docker": "mimo_core.environments.docker:DockerEnvironment",
    "kubernetes": "mimo_core.environments.kubernetes:KubernetesEnvironment",
}


def environment_class(name: str) -> type:
    """Import a backend lazily, so `local` users never pay for the docker or kubernetes clients."""
    target = _BACKENDS.get(name, name if ":" in name else None)
    if target is None:
        raise ValueError(f"unknown environment_class {name!r}; known: {sorted(_BACKENDS)} or 'module:Class'")
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)


def make_environment(config: EnvironmentConfig, spec: SandboxSpec, **extra: Any) -> Environment:
    cls = environment_class(config.environment_class)
    return cls(spec=spec, config=config, **extra)
