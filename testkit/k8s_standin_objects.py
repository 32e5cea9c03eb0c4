"""API objects of the Kubernetes stand-in (k8s_standin.py): statuses, selectors, quantities."""

from __future__ import annotations

import re
from typing import Any

_MEMORY_UNITS = {
    "Ki": 1 << 10,
    "Mi": 1 << 20,
    "Gi": 1 << 30,
    "Ti": 1 << 40,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "": 1,
}


def status_body(code: int, reason: str, message: str, causes: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """A `Status` object, as the API server returns for errors and as exec's channel 3 carries."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 300 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if causes:
        body["details"] = {"causes": causes}
    return body


def pod_status(phase: str, waiting: tuple[str, str] | None = None, unschedulable: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "conditions": []}
    if unschedulable:
        status["conditions"].append(
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": unschedulable}
        )
        return status
    status["conditions"].append({"type": "PodScheduled", "status": "True"})
    if waiting:
        state: dict[str, Any] = {"waiting": {"reason": waiting[0], "message": waiting[1]}}
    elif phase == "Running":
        state = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    else:
        state = {"waiting": {"reason": "ContainerCreating"}}
    status["containerStatuses"] = [
        {"name": "sandbox", "image": "", "imageID": "", "ready": phase == "Running", "restartCount": 0, "state": state}
    ]
    return status


def _label_ok(labels: dict[str, str], term: str) -> bool:
    term = term.strip()
    if not term:
        return True
    if term.startswith("!"):
        return term[1:] not in labels
    m = re.fullmatch(r"([^!=]+)(==|=|!=)(.*)", term)
    if m is None:
        return term in labels
    key, op, value = m.groups()
    return (labels.get(key) == value) if op != "!=" else (labels.get(key) != value)


def matches(obj: dict[str, Any], label_selector: str, field_selector: str) -> bool:
    """Equality-based label selectors and the metadata.name/namespace field selectors."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    if not all(_label_ok(labels, t) for t in label_selector.split(",")):
        return False
    for term in filter(None, field_selector.split(",")):
        key, _, value = term.partition("=")
        field = {"metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace")}.get(key)
        if field != value.lstrip("="):
            return False
    return True


def deny_all_egress(policy: dict[str, Any], pod_labels: dict[str, str]) -> bool:
    """The policy selects the pod and allows it no egress at all (Egress listed, no egress rules)."""
    spec = policy.get("spec") or {}
    selector = (spec.get("podSelector") or {}).get("matchLabels") or {}
    selected = all(pod_labels.get(k) == v for k, v in selector.items())
    return selected and "Egress" in (spec.get("policyTypes") or []) and not spec.get("egress")


def docker_limits(container: dict[str, Any]) -> dict[str, Any]:
    """The container's resource limits as docker create arguments."""
    limits = (container.get("resources") or {}).get("limits") or {}
    out: dict[str, Any] = {}
    if cpu := limits.get("cpu"):
        cores = float(cpu[:-1]) / 1000 if str(cpu).endswith("m") else float(cpu)
        out["nano_cpus"] = int(cores * 1e9)
    if mem := limits.get("memory"):
        m = re.fullmatch(r"(\d+)([A-Za-z]*)", str(mem))
        if m:
            out["mem_limit"] = int(m.group(1)) * _MEMORY_UNITS.get(m.group(2), 1)
            out["memswap_limit"] = out["mem_limit"]
    return out


def docker_security(container: dict[str, Any]) -> dict[str, Any]:
    """The container's securityContext as docker create arguments (what a kubelet would enforce)."""
    ctx = container.get("securityContext") or {}
    out: dict[str, Any] = {"privileged": bool(ctx.get("privileged"))}
    if ctx.get("allowPrivilegeEscalation") is False:
        out["security_opt"] = ["no-new-privileges"]
    return out
