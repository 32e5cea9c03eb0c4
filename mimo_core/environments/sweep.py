"""What a run does about sandboxes before it starts, and what `mimoagent cleanup` does.

Before a run: remove the sandboxes (containers, pods and local folders with their processes) of runners
that died without cleaning up (SIGKILL, power loss), and say once if commands will run unconfined.
Each backend says how (`sweep_stale`) and whether it confines (`capabilities`); nothing here tests a
backend's name.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from mimo_core.environments.local import cleanup as local_cleanup
from mimo_core.environments.registry import capabilities, environment_class
from mimo_core.errors import MimoError, SandboxError

UNCONFINED = (
    "mimoagent: environment.sandbox is 'none': the agent's commands run as {user} on this host and can read, "
    "change and signal everything this user can (files, processes, network, the runner itself). "
    "Set environment.sandbox: bwrap to confine them."
)


def _envs(configs: list[Any]) -> list[Any]:
    return [c.config.environment if hasattr(c, "config") else c.environment for c in configs]


def before_run(configs: list[Any], sweep: bool = True) -> None:
    """Sweep stale sandboxes of the backends these configs use; warn once about unconfined commands. No
    sweep (`sweep=False`) when the sandboxes live elsewhere: a Ray run's are on its nodes."""
    envs = _envs(configs)
    if sweep:
        by_class: dict[type, list[Any]] = {}
        for env in envs:
            by_class.setdefault(environment_class(env.environment_class), []).append(env)
        for cls, group in by_class.items():
            sweep_stale = getattr(cls, "sweep_stale", None)
            if sweep_stale is not None:
                sweep_stale(group)
        # the temp dir always: every backend's runs keep their host-side scratch there
        local_cleanup.cleanup([local_cleanup.default_root()], stale_only=True)
    if any(not capabilities(e).confined for e in envs):
        import getpass

        print(UNCONFINED.format(user=getpass.getuser()), file=sys.stderr)


def cleanup_all(
    run_id: str | None, roots: list[str], namespaces: list[str] | None = None, force: bool = False
) -> tuple[str, list[str]]:
    """`mimoagent cleanup`: local sandboxes always; containers when a Docker engine answers; pods of the
    kubeconfig's cluster (its context's namespace, or `namespaces`) when one is configured. Sandboxes whose
    runner lives (or, on another host, may live) are removed only with `force`: the summary, and a line
    for each one left alone."""
    stale = not force
    live: list[str] = []
    local = local_cleanup.cleanup(roots or [local_cleanup.default_root()], run_id=run_id, stale_only=stale, live=live)
    try:
        from mimo_core.environments.docker.cleanup import cleanup

        containers = f"{cleanup(run_id=run_id, stale_only=stale, live=live)} container(s)"
    except (SandboxError, ImportError) as e:
        containers = f"no containers ({str(e).splitlines()[0][:200]})"
    pods = _pods(run_id, stale, namespaces or [None], live)
    return f"removed {local} local sandbox(es), {containers}, {pods} and {_e2b(run_id, stale, live)}", live


def _e2b(run_id: str | None, stale_only: bool, live: list[str]) -> str:
    """The E2B account's sandboxes (E2B_API_KEY, E2B_API_URL for CubeSandbox), when a key is set."""
    import os

    if not os.environ.get("E2B_API_KEY"):
        return "no E2B sandboxes (no E2B_API_KEY)"
    try:
        from mimo_core.environments.e2b.cleanup import cleanup as e2b_cleanup

        n = e2b_cleanup(run_id, stale_only, live=live)
    except (SandboxError, ImportError, MimoError) as e:
        return f"no E2B sandboxes ({str(e).splitlines()[0][:200]})"
    return f"{n} E2B sandbox(es)"


def _pods(run_id: str | None, stale_only: bool, namespaces: Sequence[str | None], live: list[str]) -> str:
    import os
    from pathlib import Path

    if not (
        os.environ.get("KUBECONFIG")
        or os.environ.get("KUBERNETES_SERVICE_HOST")
        or Path("~/.kube/config").expanduser().exists()
    ):
        return "no pods (no Kubernetes config)"
    try:
        from mimo_core.environments.kubernetes import cleanup as k8s_cleanup
        from mimo_core.environments.kubernetes.pods import KubernetesOptions

        n = sum(
            k8s_cleanup.cleanup(run_id, stale_only, KubernetesOptions(namespace=ns), live=live) for ns in namespaces
        )
    except (SandboxError, ImportError, ValueError) as e:
        return f"no pods ({str(e).splitlines()[0][:200]})"
    return f"{n} pod(s)"
