"""The one list of backend names, and where each backend's class lives. Only strings: config validation
reads it without importing any backend (or anything else of mimoagent)."""

from __future__ import annotations

BACKENDS: dict[str, str] = {
    "local": "mimo_core.environments.local.environment:LocalEnvironment",
    "docker": "mimo_core.environments.docker.environment:DockerEnvironment",
    "kubernetes": "mimo_core.environments.kubernetes.environment:KubernetesEnvironment",
}
BACKEND_NAMES = tuple(BACKENDS)  # environment.environment_class may also be "package.module:Class"
