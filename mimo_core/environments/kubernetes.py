"""The kubernetes backend: one pod per rollout (or per separate verifier), driven by the official client.

It follows the docker backend seam for seam: PID 1 is the same keep-alive shell loop, commands are execs
of `bash -c` whose output goes to a file inside the pod (a background job cannot hold the call), every
exec carries a random marker in its environment and a timeout kills every process carrying it (the pod
keeps working). The bash tool's persistent shells are one exec stream kept open (`K8sShellStream`, with
shell.py's protocol). Files travel as tar over exec (k8s_files.py). Exec has no environment or working
directory of its own, so both are set by `env` and `cd` inside the command, and the command itself is
sent on stdin (no URL-length limit).

Pods are labelled like containers (k8s_pods.py) and deleted by `stop()`; `environments.live` stops what
an abandoned worker or a stopping runner still holds, and `k8s_cleanup.cleanup()` deletes what a
SIGKILLed runner left. `kubernetes` is imported lazily so `mimoagent --help` stays fast.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shlex
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mimo_core.environments import docker_registry, k8s_files, live
from mimo_core.environments.base import ExecResult, SandboxSpec
from mimo_core.environments.docker import _QUIET, KEEPALIVE
from mimo_core.environments.docker_shell import kill_script
from mimo_core.environments.k8s_exec import ExecStream, open_exec, run
from mimo_core.environments.k8s_pods import (
    KubernetesOptions,
    PodImageError,
    deny_all_policy,
    pod_manifest,
    pod_name,
    wait_running,
)
from mimo_core.environments.k8s_shell import K8sShellStream
from mimo_core.environments.shell import MAX_CAPTURE, HeadTail, ShellSession
from mimo_core.errors import SandboxError

if TYPE_CHECKING:
    from mimo_core.config import EnvironmentConfig

_KILL_GRACE = 5.0
log = logging.getLogger("mimoagent.kubernetes")
_unpullable: set[str] = set()  # images this process saw fail to pull: straight to the fallback image
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
                if (path is None and opts.context is None and os.environ.get("KUBERNETES_SERVICE_HOST")
                        and not Path("~/.kube/config").expanduser().exists()):
                    config.load_incluster_config(client_configuration=conf)
                    ns_file = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
                    namespace = ns_file.read_text().strip() if ns_file.exists() else namespace
                else:
                    config.load_kube_config(config_file=path, context=opts.context,
                                            client_configuration=conf, persist_config=False)
                    contexts, active = config.list_kube_config_contexts(config_file=path)
                    ctx = next((c for c in contexts if c["name"] == opts.context), active) if opts.context else active
                    namespace = (ctx.get("context") or {}).get("namespace") or namespace
            except (config.ConfigException, OSError) as e:
                raise SandboxError(f"cannot load the Kubernetes client config ({path or '~/.kube/config'}): {e}"
                                   ) from None
            _configs[key] = (conf, namespace)
        conf, namespace = _configs[key]
    return conf, opts.namespace or namespace


class KubernetesEnvironment:
    """One pod per rollout, deleted by `stop()` whatever happened."""

    inline_output = True  # the host cannot see the pod's files: a shell prints each call's output
    options_model = KubernetesOptions  # what environment.backend_kwargs may hold, checked at config load

    def __init__(self, spec: SandboxSpec, config: EnvironmentConfig, **_: Any) -> None:
        self.spec = spec.model_copy(deep=True)
        self.config = config
        try:
            self.options = KubernetesOptions.model_validate(config.backend_kwargs)
        except Exception as e:
            raise SandboxError(f"environment.backend_kwargs (kubernetes): {e}") from None
        self.scratch_dir = self.options.scratch_dir
        self.api: Any = None
        self.core: Any = None
        self.namespace = self.options.namespace or "default"
        self.pod: str | None = None
        self.policy: str | None = None
        self.image: str | None = None
        self._sessions: dict[str, ShellSession] = {}

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        from kubernetes import client

        conf, self.namespace = client_config(self.options)
        self.api = client.ApiClient(conf)
        self.core = client.CoreV1Api(self.api)
        self.image = self.spec.image or self.options.fallback_image
        if not self.image:
            raise SandboxError("the task names no image and Kubernetes cannot build its Dockerfile: push the image "
                               "and set the row's image, or set environment.backend_kwargs.fallback_image")
        if self.image in _unpullable and self.options.fallback_image:
            self.image = self.options.fallback_image
        try:
            self._launch(self.image)
        except PodImageError as e:
            fallback = self.options.fallback_image
            if not fallback or self.image == fallback:
                raise
            if self.image not in _unpullable:  # once per image, not once per rollout
                _unpullable.add(self.image)
                log.warning("using fallback image %s: %s", fallback, e)
            self._delete()
            self.image = fallback
            self._launch(fallback)
        dirs = " ".join(shlex.quote(d) for d in (self.spec.cwd, self.scratch_dir))
        probe = self.execute(f"mkdir -p {dirs}", timeout=60, cwd="/")
        if probe.returncode != 0:
            raise SandboxError(f"pod {self.pod} (image {self.image}) cannot run bash: {probe.output.strip()[:500]}")
        if self.spec.seed_dir:
            seed = Path(self.spec.seed_dir)
            if not seed.is_dir():
                raise SandboxError(f"seed_dir {seed} is not a folder")
            self.copy_in(seed, self.spec.cwd)

    def _launch(self, image: str) -> None:
        """Create the pod (after its NetworkPolicy when the task has no network) and wait until it runs."""
        from kubernetes import client
        from kubernetes.client.rest import ApiException

        labels = {**self.spec.labels, **docker_registry.owner_labels()}
        name = pod_name(labels, secrets.token_hex(3))
        manifest = pod_manifest(name, image, self.spec, self.options, labels,
                                ["/bin/sh", "-c", KEEPALIVE], {**_QUIET, **self.spec.env})
        live.track(self)
        try:
            if not self.spec.network and self.options.network_policy:
                self.policy = name  # before the pod: it never runs unconfined
                client.NetworkingV1Api(self.api).create_namespaced_network_policy(
                    self.namespace, deny_all_policy(name, labels))
            self.pod = name
            self.core.create_namespaced_pod(self.namespace, manifest)
        except ApiException as e:
            raise SandboxError(f"creating pod {self.namespace}/{name} failed: {e.status} {e.reason}: "
                               f"{(e.body or '')[:300]}") from None
        except Exception as e:  # urllib3: refused, DNS, TLS; the API server is not there
            raise SandboxError(f"cannot reach the Kubernetes API server at {self.api.configuration.host}: "
                               f"{str(e).splitlines()[0][:300]}") from None
        wait_running(self.core, self.namespace, name, image,
                     self.options.pod_start_timeout or self.config.startup_timeout)

    def _delete(self) -> None:
        pod, self.pod = self.pod, None
        policy, self.policy = self.policy, None
        if self.core is not None:
            from kubernetes import client

            with contextlib.suppress(Exception):
                if pod:
                    self.core.delete_namespaced_pod(pod, self.namespace, grace_period_seconds=0)
            with contextlib.suppress(Exception):
                if policy:
                    client.NetworkingV1Api(self.api).delete_namespaced_network_policy(policy, self.namespace)

    def stop(self) -> None:
        """Delete the pod (no grace period: PID 1 ignores polite signals) and its policy. Idempotent."""
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()
        self._delete()
        live.untrack(self)
        if self.api is not None:
            with contextlib.suppress(Exception):
                self.api.close()
            self.api = self.core = None

    # -- commands ----------------------------------------------------------------------------------

    def _require(self) -> str:
        if self.pod is None or self.core is None:
            raise SandboxError("KubernetesEnvironment used before start() or after stop()")
        return self.pod

    def open(self, argv: list[str], stdin: bool = True) -> ExecStream:
        return open_exec(self.core, self.namespace, self._require(), argv, stdin)

    def exec_bytes(self, script: str, stdin: bytes = b"", timeout: float = 300.0) -> tuple[int, bytes, str]:
        """(exit code, stdout, stderr) of `sh -c script`, `stdin` read by the script (`head -c`)."""
        out = bytearray()
        res = run(self.open(["sh", "-c", script]), stdin, timeout, out.extend)
        if res.returncode is None:
            raise SandboxError(f"pod {self.pod}: the exec stream ended without a status")
        return res.returncode, bytes(out), (res.stderr.decode(errors="replace") or res.status_message)

    def execute(
        self, command: str, timeout: float | None = None, cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        timeout = self.spec.timeout if timeout is None else timeout
        marker = secrets.token_hex(8)
        out = f"{self.scratch_dir}/out.{marker}"
        workdir = cwd if cwd is None or cwd.startswith("/") else f"{self.spec.cwd.rstrip('/')}/{cwd}"
        data = command.encode()
        script = (f"c=$(head -c {len(data)}; echo x); c=${{c%x}}; cd {shlex.quote(workdir or self.spec.cwd)} || exit 1;"
                  f" mkdir -p {shlex.quote(self.scratch_dir)} 2>/dev/null; "
                  f"bash -c \"$c\" </dev/null >{out} 2>&1; __mimo_rc=$?; "
                  f"cat {out} 2>/dev/null; rm -f {out}; exit $__mimo_rc")
        argv = ["env", f"MIMO_EXEC_ID={marker}", *(f"{k}={v}" for k, v in (env or {}).items()), "bash", "-c", script]
        start = time.monotonic()
        kept = HeadTail()
        res = run(self.open(argv), data, timeout, kept.feed, on_timeout=lambda: self._kill(marker), grace=_KILL_GRACE)
        output = kept.bytes().decode("utf-8", errors="replace")
        if res.timed_out:
            output += self.read_output(out).decode("utf-8", errors="replace")
            returncode = -9
        elif res.returncode is None:
            self._require()
            raise SandboxError(f"pod {self.namespace}/{self.pod} lost the command's stream (pod gone?)")
        else:
            returncode = res.returncode
            if res.status_message and res.returncode == 126:
                output += res.status_message
        return ExecResult(output=output, returncode=returncode, timed_out=res.timed_out,
                          duration_s=time.monotonic() - start)

    def interrupt(self) -> None:
        """Kill every process of the pod but its PID 1, now (any thread): running commands return."""
        if self.pod is not None:
            with contextlib.suppress(Exception):
                self.exec_bytes("kill -9 -1", timeout=10)

    def _kill(self, marker: str, name: str = "MIMO_EXEC_ID", holding: str = "", spare: str = "") -> None:
        with contextlib.suppress(Exception):
            self.exec_bytes(kill_script(f"{name}={marker}", holding, spare), timeout=30)

    # -- persistent shells (the ShellHost side of shell.py) -----------------------------------------

    def shell(self, name: str = "main") -> ShellSession:
        self._require()
        session = self._sessions.get(name)
        if session is None:
            session = self._sessions[name] = ShellSession(self, name, self.spec.cwd)
        return session

    def open_shell_stream(self, cwd: str) -> K8sShellStream:
        script = f"cd -- {shlex.quote(cwd)} 2>/dev/null; echo $$; exec bash --noprofile --norc 2>/dev/null"
        stream = K8sShellStream(self, self.open(["sh", "-c", script]))
        stream.pid = stream.read_line(60.0).strip()
        return stream

    def kill_call(self, nonce: str, out: str, shell_pid: str) -> None:
        self._kill(nonce, "MIMO_CALL", out, shell_pid)

    def read_output(self, path: str) -> bytes:
        q = shlex.quote(path)
        try:
            return self.exec_bytes(f"head -c {MAX_CAPTURE} {q} 2>/dev/null; rm -f {q}", timeout=60)[1]
        except Exception:
            return b""

    # -- files (tar over exec) ---------------------------------------------------------------------

    def read_file(self, path: str) -> bytes:
        return k8s_files.read_file(self, path)

    def write_file(self, path: str, data: bytes, mode: int | None = None) -> None:
        k8s_files.write_file(self, path, data, mode)

    def copy_in(self, src: Path, dest: str) -> None:
        k8s_files.copy_in(self, Path(src), dest)

    def copy_out(self, src: str, dest: Path) -> None:
        k8s_files.copy_out(self, src, Path(dest))
