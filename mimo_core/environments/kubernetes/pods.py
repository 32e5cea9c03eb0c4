"""Pods of the kubernetes backend: the options it takes, the objects it creates, and the bounded wait.

Labels are the containers' labels (run id, instance, config, the runner's host and pid). Kubernetes
allows only `[A-Za-z0-9_.-]`, 63 characters, in a label value, so a value that does not fit is cleaned
and shortened with a hash suffix (`label_value`); the exact values ride along as annotations. A task with
no network gets a deny-all NetworkPolicy selecting its pod alone, created before the pod, deleted after it.
"""

from __future__ import annotations

import hashlib
import re
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mimo_core.environments.base import LABEL_INSTANCE, LABEL_RUN_ID, SandboxSpec
from mimo_core.errors import SandboxError

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
LABEL_KEY = re.compile(rf"({DNS_SUBDOMAIN.pattern}/)?{_LABEL_NAME}")
LABEL_VALUE = re.compile(rf"({_LABEL_NAME})?")
LABEL_SANDBOX = "mimoagent.sandbox"  # the pod's own name: what its NetworkPolicy selects
CONTAINER = "sandbox"
# Reasons a pod will not get past on its own: fail now instead of waiting out the start timeout.
IMAGE_REASONS = {"ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}
FATAL_WAITING = {
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "CrashLoopBackOff",
    "RunContainerError",
}


class PodImageError(SandboxError):
    """The pod's image cannot be pulled (or is not a valid name): a fallback image may help."""


class Toleration(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str | None = None
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = None


class KubernetesOptions(BaseModel):
    """`environment.backend_kwargs` for the kubernetes backend, checked when the config loads."""

    model_config = ConfigDict(extra="forbid")

    kubeconfig: str | None = None  # default: $KUBECONFIG, ~/.kube/config, or the pod's service account
    context: str | None = None  # kubeconfig context; default: its current context
    namespace: str | None = None  # default: the context's namespace, else "default"
    service_account: str | None = None  # none: the pod gets no API token mounted
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)
    image_pull_secrets: list[str] = Field(default_factory=list)  # names of docker-registry secrets
    fallback_image: str | None = None  # for rows that name no image (Kubernetes cannot build a Dockerfile)
    scratch_dir: str = "/tmp/.mimo"
    pod_start_timeout: float | None = Field(default=None, gt=0)  # default: environment.startup_timeout
    # The kubelet ends a pod this many seconds after it started whatever happens: a backstop for pods whose
    # runner was SIGKILLed on another machine (cleanup --stale-only only sees this host's runners).
    active_deadline_seconds: int | None = Field(default=None, gt=0)
    network_policy: bool = True  # no-network tasks get a deny-all NetworkPolicy (needs a CNI enforcing it)

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, v: str | None) -> str | None:
        if v is not None and not DNS_LABEL.fullmatch(v):
            raise ValueError(f"{v!r} is not a Kubernetes namespace name (lowercase letters, digits, '-')")
        return v

    @field_validator("service_account")
    @classmethod
    def _service_account(cls, v: str | None) -> str | None:
        if v is not None and not DNS_SUBDOMAIN.fullmatch(v):
            raise ValueError(f"{v!r} is not a service account name")
        return v

    @field_validator("image_pull_secrets")
    @classmethod
    def _secrets(cls, v: list[str]) -> list[str]:
        bad = [s for s in v if not DNS_SUBDOMAIN.fullmatch(s)]
        if bad:
            raise ValueError(f"not Kubernetes secret names: {bad}")
        return v

    @field_validator("node_selector")
    @classmethod
    def _node_selector(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [f"{k}={val}" for k, val in v.items() if not LABEL_KEY.fullmatch(k) or not LABEL_VALUE.fullmatch(val)]
        if bad:
            raise ValueError(f"not Kubernetes labels: {bad}")
        return v


def label_value(text: str) -> str:
    """A valid label value for `text`: itself when it fits, else cleaned, cut and suffixed with a hash."""
    if len(text) <= 63 and LABEL_VALUE.fullmatch(text):
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    clean = re.sub(r"[^A-Za-z0-9_.-]+", "-", text)[:54].strip("-_.")
    return f"{clean}-{digest}" if clean else digest


def pod_name(labels: dict[str, str], suffix: str) -> str:
    def part(text: str, n: int) -> str:
        return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:n].strip("-") or "x"

    return f"mimo-{part(labels.get(LABEL_INSTANCE, 'task'), 36)}-{part(labels.get(LABEL_RUN_ID, 'run'), 16)}-{suffix}"


def budget_ended(pod: Any, memory_mb: int | None, storage_mb: int | None) -> Any:
    """The budget a pod was ended for, from its status (the kubelet's OOMKilled or eviction), or None."""
    from mimo_core.environments.budgets import Exceeded

    status = getattr(pod, "status", None)
    if status is None:
        return None
    message = str(getattr(status, "message", "") or "")
    if getattr(status, "reason", None) == "Evicted" and "ephemeral" in message.lower():
        return Exceeded("disk", f"the pod was evicted past its disk budget ({storage_mb} MB): {message[:300]}")
    for cs in getattr(status, "container_statuses", None) or []:
        for state in (getattr(cs, "state", None), getattr(cs, "last_state", None)):
            terminated = getattr(state, "terminated", None)
            if terminated is not None and getattr(terminated, "reason", None) == "OOMKilled":
                return Exceeded(
                    "memory",
                    f"the pod went past its memory budget ({memory_mb} MB) and the kernel "
                    "killed its main process (OOMKilled)",
                )
    return None


def quantity_cpu(cpus: float) -> str:
    return f"{round(cpus * 1000)}m"


def pod_manifest(
    name: str,
    image: str,
    spec: SandboxSpec,
    opts: KubernetesOptions,
    labels: dict[str, str],
    command: list[str],
    env: dict[str, str],
) -> dict[str, Any]:
    """The pod: one container running `command` (a keep-alive PID 1), never restarted."""
    resources: dict[str, dict[str, str]] = {}
    if spec.cpus:
        resources.setdefault("limits", {})["cpu"] = quantity_cpu(spec.cpus)
    if spec.memory_mb:
        resources.setdefault("limits", {})["memory"] = f"{spec.memory_mb}Mi"
    if spec.storage_mb:  # the kubelet evicts a pod past it (its writable layer, logs, emptyDirs)
        resources.setdefault("limits", {})["ephemeral-storage"] = f"{spec.storage_mb}Mi"
    if resources:
        resources["requests"] = dict(resources["limits"])  # requests = limits: the Guaranteed QoS class
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": image,
        "command": command,
        "workingDir": spec.cwd,
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "resources": resources,
        "stdin": False,
        "tty": False,
        # No extra capabilities, no privileged mode, no setuid escalation (the agent is hostile).
        "securityContext": {"privileged": False, "allowPrivilegeEscalation": False},
    }
    pod_spec: dict[str, Any] = {
        "containers": [container],
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "enableServiceLinks": False,
        "automountServiceAccountToken": opts.service_account is not None,
    }
    if opts.service_account:
        pod_spec["serviceAccountName"] = opts.service_account
    if opts.node_selector:
        pod_spec["nodeSelector"] = dict(opts.node_selector)
    if opts.tolerations:
        pod_spec["tolerations"] = [_camel(t.model_dump(exclude_none=True)) for t in opts.tolerations]
    if opts.image_pull_secrets:
        pod_spec["imagePullSecrets"] = [{"name": s} for s in opts.image_pull_secrets]
    if opts.active_deadline_seconds:
        pod_spec["activeDeadlineSeconds"] = opts.active_deadline_seconds
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {k: label_value(v) for k, v in labels.items()} | {LABEL_SANDBOX: name},
            "annotations": dict(labels),
        },
        "spec": pod_spec,
    }


def deny_all_policy(name: str, labels: dict[str, str]) -> dict[str, Any]:
    """No ingress and no egress for the one pod labelled `mimoagent.sandbox=<name>` (DNS included)."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": name,
            "labels": {k: label_value(v) for k, v in labels.items()},
            "annotations": dict(labels),
        },
        "spec": {"podSelector": {"matchLabels": {LABEL_SANDBOX: name}}, "policyTypes": ["Ingress", "Egress"]},
    }


def _camel(d: dict[str, Any]) -> dict[str, Any]:
    return {re.sub(r"_(\w)", lambda m: m.group(1).upper(), k): v for k, v in d.items()}


def _verdict(pod: Any) -> tuple[str, str, str]:
    """("running" | "fatal" | "waiting", reason, message) for a pod as the API reports it."""
    status = pod.status
    phase = (status.phase if status else None) or "Pending"
    for cs in (status.container_statuses or []) if status else []:
        state = cs.state
        if state and state.running:
            return "running", "Running", ""
        if state and state.terminated:
            t = state.terminated
            return "fatal", t.reason or "Terminated", f"exit code {t.exit_code}. {t.message or ''}".strip()
        if state and state.waiting:
            w = state.waiting
            return ("fatal" if w.reason in FATAL_WAITING else "waiting"), w.reason or "Waiting", w.message or ""
    if phase in ("Failed", "Succeeded"):
        return "fatal", (status.reason or phase), status.message or ""
    for cond in (status.conditions or []) if status else []:
        if cond.type == "PodScheduled" and cond.status == "False":
            return "waiting", cond.reason or "Unschedulable", cond.message or ""
    return "waiting", phase, ""


def wait_running(core: Any, namespace: str, name: str, image: str, timeout: float) -> None:
    """Watch the pod until its container runs; a reason it cannot get past (or the timeout) is a
    SandboxError naming the reason and message Kubernetes gave (ImagePullBackOff, Unschedulable, ...)."""
    from kubernetes import watch
    from kubernetes.client.rest import ApiException
    from urllib3.exceptions import HTTPError

    deadline = time.monotonic() + timeout
    reason, message = "Pending", "no status reported yet"
    while (remaining := deadline - time.monotonic()) > 0:
        w = watch.Watch()
        try:
            for event in w.stream(
                core.list_namespaced_pod,
                namespace,
                field_selector=f"metadata.name={name}",
                timeout_seconds=max(1, int(remaining)),
                _request_timeout=remaining + 10,
            ):
                if event["type"] == "DELETED":
                    raise SandboxError(f"pod {namespace}/{name} was deleted while it started")
                verdict, reason, message = _verdict(event["object"])
                if verdict == "running":
                    return
                if verdict == "fatal":
                    error = PodImageError if reason in IMAGE_REASONS else SandboxError
                    raise error(f"pod {namespace}/{name} (image {image}) cannot start: {reason}: {message}")
                if time.monotonic() >= deadline:
                    break
        except ApiException as e:
            raise SandboxError(f"watching pod {namespace}/{name} failed: {e.status} {e.reason}") from None
        except (HTTPError, OSError, ValueError) as e:  # refused, reset; a cut stream can fail to parse
            raise SandboxError(f"watching pod {namespace}/{name} failed: {str(e).splitlines()[0][:300]}") from None
        finally:
            w.stop()
    raise SandboxError(
        f"pod {namespace}/{name} (image {image}) did not start within {timeout:.0f}s: {reason}: {message}".rstrip(": ")
    )
