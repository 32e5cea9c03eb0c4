"""The stand-in node's kubelet budgets (k8s_standin.py): what a kubelet does to a pod past its memory or
its ephemeral storage, emulated on the container that backs the pod.

- memory: on a cgroup-v2 node (Kubernetes 1.28 and later) the kubelet sets `memory.oom.group` on each
  container, so the first OOM kill in it ends all of its processes: the container terminates with reason
  `OOMKilled` (exit code 137) and, never restarted, its pod is `Failed`. The stand-in reads the container's
  OOM kill count from its cgroup (v1 `memory.oom_control`, v2 `memory.events`) every 0.5 s and at the
  first kill kills the container and reports just that (on cgroup v1 docker kills only the one process).
- ephemeral storage: the kubelet's eviction manager evicts a pod whose containers use more than the sum of
  their `ephemeral-storage` limits: phase `Failed`, reason `Evicted`, the kubelet's message, a
  `DisruptionTarget` condition, the container terminated. The stand-in measures the container's writable
  layer every second: the allocated blocks of its overlay upper folder (as containerd's snapshotter
  counts them), docker's `SizeRw` where that folder is not on this host.

Never compared with a real kubelet: the statuses follow the kubelet's source (pkg/kubelet/eviction,
`podEphemeralStorageMessageFmt`) and the API reference, not a recorded cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
from pathlib import Path
from typing import Any

OOM_POLL, DISK_POLL = 0.5, 1.0
_UNITS = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "k": 10**3, "M": 10**6, "G": 10**9, "": 1}


def quantity_bytes(text: Any) -> int | None:
    m = re.fullmatch(r"(\d+)([A-Za-z]*)", str(text or ""))
    return int(m.group(1)) * _UNITS[m.group(2)] if m and m.group(2) in _UNITS else None


def oom_counter(pid: int) -> Path | None:
    """The file holding the OOM kill count of the cgroup process `pid` is in (v1 memory, or v2)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return Path("/sys/fs/cgroup/memory") / path.lstrip("/") / "memory.oom_control"
    for line in lines:
        if line.startswith("0::"):
            return Path("/sys/fs/cgroup") / line[3:].lstrip("/") / "memory.events"
    return None


def oom_kills(counter: Path) -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in counter.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
    return 0


def layer_bytes(api: Any, cid: str, upper: str | None) -> int:
    """Bytes the container's writable layer takes."""
    if upper and os.path.isdir(upper):
        res = subprocess.run(["du", "-s", "-x", "-B1", upper], capture_output=True, text=True, check=False)
        with contextlib.suppress(IndexError, ValueError):
            return int(res.stdout.split()[0])
    info = api._result(api._get(api._url("/containers/{0}/json", cid), params={"size": 1}), True)
    return int(info.get("SizeRw") or 0)


def failed_status(
    pod: dict[str, Any], terminated: dict[str, Any], reason: str | None = None, message: str | None = None
) -> dict[str, Any]:
    """The pod's status once its one container terminated (`terminated`), never to restart."""
    old = pod.get("status") or {}
    status: dict[str, Any] = {
        "phase": "Failed",
        "conditions": [c for c in old.get("conditions") or [] if c.get("type") == "PodScheduled"],
    }
    if reason:
        status |= {"reason": reason, "message": message or ""}
        status["conditions"].append(
            {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet", "message": message}
        )
    status["conditions"] += [
        {"type": t, "status": "False", "reason": "PodFailed"} for t in ("Ready", "ContainersReady")
    ]
    cs = dict((old.get("containerStatuses") or [{"name": "sandbox", "image": "", "imageID": ""}])[0])
    cs |= {"ready": False, "started": False, "restartCount": 0, "state": {"terminated": terminated}}
    status["containerStatuses"] = [cs]
    return status


async def watch(standin: Any, ns: str, name: str, cid: str, container: dict[str, Any]) -> None:
    """Enforce the budgets of pod `ns/name` (container `cid`) until it is deleted or ends."""
    try:
        await _watch(standin, ns, name, cid, container)
    except Exception:  # the container went away under a look (the pod deleted): nothing to enforce
        return


async def _watch(standin: Any, ns: str, name: str, cid: str, container: dict[str, Any]) -> None:
    limits = (container.get("resources") or {}).get("limits") or {}
    storage = quantity_bytes(limits.get("ephemeral-storage"))
    api = standin.docker.api
    info = await asyncio.to_thread(api.inspect_container, cid)
    counter = oom_counter(int(info["State"].get("Pid") or 0)) if limits.get("memory") else None
    upper = ((info.get("GraphDriver") or {}).get("Data") or {}).get("UpperDir")
    loop = asyncio.get_running_loop()
    next_disk = loop.time()

    def running() -> bool:
        pod = standin.pods.get((ns, name))
        return standin.containers.get((ns, name)) == cid and pod is not None and pod["status"]["phase"] == "Running"

    while running():
        ended: tuple[dict[str, Any], str | None, str | None] | None = None
        if counter is not None and oom_kills(counter) > 0:
            ended = ({"exitCode": 137, "reason": "OOMKilled"}, None, None)
        elif storage and loop.time() >= next_disk:
            used = await asyncio.to_thread(layer_bytes, api, cid, upper)
            next_disk = loop.time() + DISK_POLL
            if used > storage:
                limit = limits["ephemeral-storage"]
                message = f"Pod ephemeral local storage usage exceeds the total limit of containers {limit}. "
                ended = ({"exitCode": 137, "reason": "Error"}, "Evicted", message)
        if ended is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(api.kill, cid)
            pod = standin.pods.get((ns, name))
            if pod is not None:
                terminated = {**ended[0], "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:01Z"}
                pod["status"] = failed_status(pod, terminated, ended[1], ended[2])
                standin._changed("MODIFIED", pod)
            return
        await asyncio.sleep(OOM_POLL)
