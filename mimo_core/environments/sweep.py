"""What a run does about sandboxes before it starts, and what `mimoagent cleanup` does.

Before a run: remove the sandboxes (containers and local folders with their processes) of runners that
died without cleaning up (SIGKILL, power loss), and say once if commands will run unconfined.
"""

from __future__ import annotations

import sys
from typing import Any

from mimo_core.environments import local_cleanup
from mimo_core.errors import SandboxError

UNCONFINED = (
    "mimoagent: environment.sandbox is 'none': the agent's commands run as {user} on this host and can read, "
    "change and signal everything this user can (files, processes, network, the runner itself). "
    "Set environment.sandbox: bwrap to confine them."
)


def _envs(configs: list[Any]) -> list[Any]:
    return [c.config.environment if hasattr(c, "config") else c.environment for c in configs]


def before_run(configs: list[Any], sweep: bool = True) -> None:
    """Sweep stale sandboxes of the backends these configs use; warn once about `sandbox: none`. No sweep
    (`sweep=False`) when the sandboxes live elsewhere: a Ray run's are on its nodes."""
    envs = _envs(configs) if sweep else []
    if any(e.environment_class == "docker" for e in envs):
        from mimo_core.environments.docker_cleanup import cleanup

        cleanup(stale_only=True)
    kube = [e for e in envs if e.environment_class == "kubernetes"]
    if kube:
        from mimo_core.environments import k8s_cleanup
        from mimo_core.environments.k8s_pods import KubernetesOptions

        for opts in {KubernetesOptions.model_validate(e.backend_kwargs).model_dump_json(
                include={"kubeconfig", "context", "namespace"}) for e in kube}:
            k8s_cleanup.cleanup(stale_only=True, options=KubernetesOptions.model_validate_json(opts))
    if sweep:  # the temp dir always: every backend's runs keep their host-side scratch there
        local_cleanup.cleanup([*local_cleanup.roots_of(configs), local_cleanup.default_root()], stale_only=True)
    if any(e.environment_class == "local" and e.sandbox == "none" for e in _envs(configs)):
        import getpass

        print(UNCONFINED.format(user=getpass.getuser()), file=sys.stderr)


def cleanup_all(run_id: str | None, stale_only: bool, roots: list[str], namespaces: list[str] | None = None) -> str:
    """`mimoagent cleanup`: local sandboxes always; containers when a Docker engine answers; pods of the
    kubeconfig's cluster (its context's namespace, or `namespaces`) when one is configured."""
    local = local_cleanup.cleanup(roots or [local_cleanup.default_root()], run_id=run_id, stale_only=stale_only)
    try:
        from mimo_core.environments.docker_cleanup import cleanup

        containers = f"{cleanup(run_id=run_id, stale_only=stale_only)} container(s)"
    except (SandboxError, ImportError) as e:
        containers = f"no containers ({str(e).splitlines()[0][:200]})"
    return f"removed {local} local sandbox(es), {containers} and {_pods(run_id, stale_only, namespaces or [None])}"


def _pods(run_id: str | None, stale_only: bool, namespaces: list[str | None]) -> str:
    import os
    from pathlib import Path

    if not (os.environ.get("KUBECONFIG") or os.environ.get("KUBERNETES_SERVICE_HOST")
            or Path("~/.kube/config").expanduser().exists()):
        return "no pods (no Kubernetes config)"
    try:
        from mimo_core.environments import k8s_cleanup
        from mimo_core.environments.k8s_pods import KubernetesOptions

        n = sum(k8s_cleanup.cleanup(run_id, stale_only, KubernetesOptions(namespace=ns)) for ns in namespaces)
    except (SandboxError, ImportError, ValueError) as e:
        return f"no pods ({str(e).splitlines()[0][:200]})"
    return f"{n} pod(s)"
