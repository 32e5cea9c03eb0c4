"""The kubernetes backend: one pod per rollout (or per separate verifier), driven by the official client.

It follows the docker backend seam for seam: PID 1 is the same keep-alive shell loop, commands are execs
of `bash -c` whose output goes to a file inside the pod (a background job cannot hold the call), every
exec carries a random marker in its environment and a timeout kills every process carrying it (the pod
keeps working). The bash tool's persistent shells are one exec stream kept open (`K8sShellStream`, with
shell.py's protocol). Files travel as tar over exec (kubernetes/files.py). Exec has no environment or working
directory of its own, so both are set by `env` and `cd` inside the command, and the command itself is
sent on stdin (no URL-length limit).

Pods are labelled like containers (kubernetes/pods.py) and deleted by `stop()`; `environments.live` stops what
an abandoned worker or a stopping runner still holds, and `kubernetes/cleanup.py`'s `cleanup()` deletes what a
SIGKILLed runner left. `kubernetes` is imported lazily so `mimoagent --help` stays fast.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mimo_core.environments import live
from mimo_core.environments.base import LABEL_INSTANCE, Capabilities, ExecResult, FileHead
from mimo_core.environments.container.base import (
    EXEC_MARKER,
    KEEPALIVE,
    KILL_GRACE,
    QUIET_ENV,
    ContainerEnvironment,
    capture_script,
)
from mimo_core.environments.kubernetes import files as k8s_files
from mimo_core.environments.kubernetes.client import client_config
from mimo_core.environments.kubernetes.exec import ExecStream, StreamClient, run
from mimo_core.environments.kubernetes.pods import (
    KubernetesOptions,
    PodImageError,
    deny_all_policy,
    pod_manifest,
    pod_name,
    wait_running,
)
from mimo_core.environments.kubernetes.shell import K8sShellStream, open_shell
from mimo_core.environments.owners import owner_labels
from mimo_core.environments.shell import HeadTail
from mimo_core.errors import SandboxError

if TYPE_CHECKING:
    from mimo_core.config import EnvironmentConfig

log = logging.getLogger("mimoagent.kubernetes")
_unpullable: set[str] = set()  # images this process saw fail to pull: straight to the fallback image


class KubernetesEnvironment(ContainerEnvironment):
    """One pod per rollout, deleted by `stop()` whatever happened."""

    options_model = KubernetesOptions  # what environment.backend_kwargs may hold, checked at config load
    backend_name = "kubernetes"

    @staticmethod
    def capabilities(config: EnvironmentConfig) -> Capabilities:
        return Capabilities(
            host_files=False, image_tasks=True, confined=True, network_isolation=True, host_mounts=False
        )

    @staticmethod
    def sweep_stale(configs: list[EnvironmentConfig]) -> None:
        """Pods of dead runners of this host, in each cluster and namespace these configs use."""
        from mimo_core.environments.kubernetes.cleanup import cleanup

        wanted = {
            KubernetesOptions.model_validate(c.backend_kwargs).model_dump_json(
                include={"kubeconfig", "context", "namespace"}
            )
            for c in configs
        }
        for opts in wanted:
            cleanup(stale_only=True, options=KubernetesOptions.model_validate_json(opts))

    def __init__(self, spec: Any, config: EnvironmentConfig, **_: Any) -> None:
        super().__init__(spec, config)
        self.api: Any = None
        self.core: Any = None  # REST calls; commands' streams open on `streams`, a client of their own
        self.streams: StreamClient | None = None
        self.namespace = self.options.namespace or "default"
        self.pod: str | None = None
        self.policy: str | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        from kubernetes import client

        conf, self.namespace = client_config(self.options)
        self.api = client.ApiClient(conf)
        self.core = client.CoreV1Api(self.api)
        self.streams = StreamClient(conf)
        self.image = self.spec.image or self.options.fallback_image
        if not self.image:
            raise SandboxError(
                "the task names no image and Kubernetes cannot build its Dockerfile: push the image "
                "and set the row's image, or set environment.backend_kwargs.fallback_image"
            )
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
        self._prepare()
        self.mark_system_baseline()

    def _launch(self, image: str) -> None:
        """Create the pod (after its NetworkPolicy when the task has no network) and wait until it runs."""
        from kubernetes import client
        from kubernetes.client.rest import ApiException

        labels = {**self.spec.labels, **owner_labels()}
        name = pod_name(labels, secrets.token_hex(3))
        manifest = pod_manifest(
            name, image, self.spec, self.options, labels, ["/bin/sh", "-c", KEEPALIVE], {**QUIET_ENV, **self.spec.env}
        )
        live.track(self)
        try:
            if not self.spec.network and self.options.network_policy:
                self.policy = name  # before the pod: it never runs unconfined
                client.NetworkingV1Api(self.api).create_namespaced_network_policy(
                    self.namespace, deny_all_policy(name, labels)
                )
            self.pod = name
            self.core.create_namespaced_pod(self.namespace, manifest)
        except ApiException as e:
            raise SandboxError(
                f"creating pod {self.namespace}/{name} failed: {e.status} {e.reason}: {(e.body or '')[:300]}"
            ) from None
        except Exception as e:  # urllib3: refused, DNS, TLS; the API server is not there
            raise SandboxError(
                f"cannot reach the Kubernetes API server at {self.api.configuration.host}: "
                f"{str(e).splitlines()[0][:300]}"
            ) from None
        wait_running(
            self.core, self.namespace, name, image, self.options.pod_start_timeout or self.config.startup_timeout
        )

    def _delete(self) -> None:
        pod, self.pod = self.pod, None
        policy, self.policy = self.policy, None
        if self.core is not None:
            from kubernetes import client

            if pod:
                try:
                    self.core.delete_namespaced_pod(pod, self.namespace, grace_period_seconds=0)
                except Exception as e:  # a pod left behind is said, not hidden: `mimoagent cleanup` removes it
                    if getattr(e, "status", None) != 404:
                        log.warning(
                            "deleting pod %s/%s failed (%s): run `mimoagent cleanup`",
                            self.namespace,
                            pod,
                            str(e).splitlines()[0][:200] if str(e) else type(e).__name__,
                        )
            with contextlib.suppress(Exception):
                if policy:
                    client.NetworkingV1Api(self.api).delete_namespaced_network_policy(policy, self.namespace)

    def stop(self) -> None:
        """Delete the pod (no grace period: PID 1 ignores polite signals) and its policy. Idempotent."""
        self._close_sessions()
        self._delete()
        live.untrack(self)
        if self.api is not None:
            with contextlib.suppress(Exception):
                self.api.close()
            self.api = self.core = None
        if self.streams is not None:
            self.streams.close()
            self.streams = None

    # -- commands ----------------------------------------------------------------------------------

    def budget_exceeded(self) -> Any:
        """The budget the pod was ended for (OOMKilled, evicted for ephemeral storage), or None. The
        kubelet enforces both; this is asked after a failure, so it reads the pod's status only then."""
        from mimo_core.environments.kubernetes.pods import budget_ended

        if self.pod is None or self.core is None:
            return None
        try:
            pod = self.core.read_namespaced_pod(self.pod, self.namespace)
        except Exception:
            return None
        return budget_ended(pod, self.spec.memory_mb, self.spec.storage_mb)

    def _require(self) -> str:
        if self.pod is None or self.core is None:
            raise SandboxError("KubernetesEnvironment used before start() or after stop()")
        return self.pod

    def _where(self) -> str:
        return f"pod {self.namespace}/{self.pod}"

    def open(self, argv: list[str], stdin: bool = True) -> ExecStream:
        pod, streams = self._require(), self.streams
        if streams is None:
            raise SandboxError("KubernetesEnvironment used before start() or after stop()")
        return streams.open(self.namespace, pod, argv, stdin)

    def exec_bytes(self, script: str, stdin: bytes = b"", timeout: float = 300.0) -> tuple[int, bytes, str]:
        """(exit code, stdout, stderr) of `sh -c script`, `stdin` read by the script (`head -c`)."""
        out = bytearray()
        res = run(self.open(["sh", "-c", script]), stdin, timeout, out.extend)
        if res.returncode is None:
            raise SandboxError(f"pod {self.pod}: the exec stream ended without a status")
        return res.returncode, bytes(out), (res.stderr.decode(errors="replace") or res.status_message)

    def execute(
        self,
        command: str,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        timeout = self.spec.timeout if timeout is None else timeout
        marker = secrets.token_hex(8)
        out = f"{self.scratch_dir}/out.{marker}"
        data = command.encode()
        run_it = capture_script('"$c"', out)
        script = (
            f"c=$(head -c {len(data)}; echo x); c=${{c%x}}; cd {shlex.quote(self._workdir(cwd))} 2>&1 || exit 1;"
            f" mkdir -p {shlex.quote(self.scratch_dir)} 2>/dev/null; {run_it}"
        )
        argv = ["env", f"{EXEC_MARKER}={marker}", *(f"{k}={v}" for k, v in (env or {}).items()), "bash", "-c", script]
        start = time.monotonic()
        kept = HeadTail()
        res = run(self.open(argv), data, timeout, kept.feed, on_timeout=lambda: self._kill(marker), grace=KILL_GRACE)
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
        return ExecResult(
            output=output, returncode=returncode, timed_out=res.timed_out, duration_s=time.monotonic() - start
        )

    # -- a pristine system for grading (container/system_files.py) ----------------------------------

    @contextlib.contextmanager
    def _reference(self) -> Iterator[KubernetesEnvironment]:
        """A pod of the same image, never touched, without network; deleted on exit."""
        labels = dict(self.spec.labels)
        labels[LABEL_INSTANCE] = f"{labels.get(LABEL_INSTANCE, 'task')}-reference"
        spec = self.spec.model_copy(
            update={"image": self.image, "seed_dir": None, "network": False, "mounts": {}, "labels": labels}, deep=True
        )
        ref = KubernetesEnvironment(spec, self.config)
        try:
            ref.start()
            yield ref
        finally:
            ref.stop()

    def _extract_root(self, archive: bytes) -> None:
        rc, out, err = self.exec_bytes(f"head -c {len(archive)} | tar -xpf - -C /", archive, timeout=600)
        if rc != 0:
            raise SandboxError(
                f"pod {self.namespace}/{self.pod}: restoring the image's files failed (exit {rc}): "
                f"{out[-200:].decode(errors='replace')}{err[:200]}"
            )

    # -- persistent shells (the ShellHost side of shell.py) -----------------------------------------

    def open_shell_stream(self, cwd: str) -> K8sShellStream:
        return open_shell(self, cwd)

    # -- files (tar over exec) ---------------------------------------------------------------------

    def read_file(self, path: str) -> bytes:
        return k8s_files.read_file(self, path)

    def read_head(self, path: str, max_bytes: int) -> FileHead:
        return k8s_files.read_head(self, path, max_bytes)

    def write_file(self, path: str, data: bytes, mode: int | None = None) -> None:
        k8s_files.write_file(self, path, data, mode)

    def copy_in(self, src: Path, dest: str) -> None:
        k8s_files.copy_in(self, Path(src), dest)

    def copy_out(self, src: str, dest: Path) -> None:
        k8s_files.copy_out(self, src, Path(dest))
