"""The Kubernetes client's configuration, parsed once per process per (kubeconfig, context)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from mimo_core.environments.kubernetes.pods import KubernetesOptions
from mimo_core.errors import SandboxError

_configs: dict[tuple[str | None, str | None], tuple[Any, str]] = {}  # (kubeconfig, context) -> (conf, ns)
_configs_lock = threading.Lock()


def client_config(opts: KubernetesOptions) -> tuple[Any, str]:
    """(client Configuration, namespace): the kubeconfig (parsed once per process) or, inside a pod with no
    kubeconfig, the pod's service account. The namespace: the option, else the context's, else default."""
    from kubernetes import client, config

    # $KUBECONFIG read now, not when the client was imported (it fixes its default path at import).
    path = opts.kubeconfig or os.environ.get("KUBECONFIG") or None
    key = (path, opts.context)
    with _configs_lock:
        if key not in _configs:
            conf = client.Configuration()
            namespace = "default"
            try:
                if (
                    path is None
                    and opts.context is None
                    and os.environ.get("KUBERNETES_SERVICE_HOST")
                    and not Path("~/.kube/config").expanduser().exists()
                ):
                    config.load_incluster_config(client_configuration=conf)
                    ns_file = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
                    namespace = ns_file.read_text().strip() if ns_file.exists() else namespace
                else:
                    config.load_kube_config(
                        config_file=path, context=opts.context, client_configuration=conf, persist_config=False
                    )
                    contexts, active = config.list_kube_config_contexts(config_file=path)
                    ctx = next((c for c in contexts if c["name"] == opts.context), active) if opts.context else active
                    namespace = (ctx.get("context") or {}).get("namespace") or namespace
            except (config.ConfigException, OSError) as e:
                raise SandboxError(
                    f"cannot load the Kubernetes client config ({path or '~/.kube/config'}): {e}"
                ) from None
            _configs[key] = (conf, namespace)
        conf, namespace = _configs[key]
    return conf, opts.namespace or namespace
