"""Delete leftover mimoagent pods (and their NetworkPolicies): all, one run's, or only dead runners'.

`mimoagent cleanup` and the start-of-run sweep call `cleanup()` per namespace the same way the docker
backend's cleanup removes containers: by the `mimoagent.run_id` label, "stale" meaning made on this host by
a runner pid that no longer exists (pods of runners on other machines are left alone; see
`active_deadline_seconds` for those).
"""

from __future__ import annotations

import contextlib

from mimo_core.environments.base import LABEL_RUN_ID
from mimo_core.environments.kubernetes.pods import KubernetesOptions, label_value
from mimo_core.environments.owners import LABEL_HOST, LABEL_PID, is_stale
from mimo_core.errors import SandboxError


def cleanup(
    run_id: str | None = None,
    stale_only: bool = False,
    options: KubernetesOptions | None = None,
    live: list[str] | None = None,
) -> int:
    """Delete mimoagent pods of `options`' cluster and namespace; return how many. With `stale_only`, each
    one left alone because its runner may live is described in `live`."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    from mimo_core.environments.kubernetes.client import client_config

    options = options or KubernetesOptions()
    conf, namespace = client_config(options)
    selector = f"{LABEL_RUN_ID}={label_value(run_id)}" if run_id else LABEL_RUN_ID
    with client.ApiClient(conf) as api:
        core, net = client.CoreV1Api(api), client.NetworkingV1Api(api)
        try:
            # (connect, read) seconds: an unreachable cluster in a stale kubeconfig must not hang `cleanup`.
            pods = core.list_namespaced_pod(namespace, label_selector=selector, _request_timeout=(5, 30)).items
        except Exception as e:  # ApiException, or urllib3's errors when the API server is not there
            raise SandboxError(f"cannot list pods in namespace {namespace}: {str(e).splitlines()[0][:200]}") from None
        removed = 0
        for pod in pods:
            # Exact owner values are in the annotations (labels may be shortened).
            owner = {**(pod.metadata.labels or {}), **(pod.metadata.annotations or {})}
            if stale_only and not is_stale(owner):
                if live is not None:
                    live.append(
                        f"pod {pod.metadata.name} (run {owner.get(LABEL_RUN_ID, '?')}, "
                        f"pid {owner.get(LABEL_PID, '?')} on {owner.get(LABEL_HOST, '?')})"
                    )
                continue
            with contextlib.suppress(ApiException):
                core.delete_namespaced_pod(pod.metadata.name, namespace, grace_period_seconds=0)
                removed += 1
            with contextlib.suppress(ApiException):
                net.delete_namespaced_network_policy(pod.metadata.name, namespace)
        # Policies whose pod never came (the runner died between the two creates).
        live_pods = {p.metadata.name for p in pods}
        with contextlib.suppress(ApiException):
            for policy in net.list_namespaced_network_policy(namespace, label_selector=selector).items:
                owner = {**(policy.metadata.labels or {}), **(policy.metadata.annotations or {})}
                if policy.metadata.name in live_pods or (stale_only and not is_stale(owner)):
                    continue
                with contextlib.suppress(ApiException):
                    net.delete_namespaced_network_policy(policy.metadata.name, namespace)
        return removed
