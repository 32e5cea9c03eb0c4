"""A Kubernetes API server stand-in for tests and benches: no cluster can run on these machines.

It serves, on 127.0.0.1, only what the kubernetes backend calls, in the API's own JSON, so the official
`kubernetes` client talks to it unchanged through a kubeconfig (`write_kubeconfig`):

    pods             POST/GET(list, watch)/GET/DELETE  /api/v1/namespaces/{ns}/pods[/{name}]
    exec             GET/POST /api/v1/namespaces/{ns}/pods/{name}/exec   (WebSocket, v5/v4.channel.k8s.io)
    networkpolicies  POST/GET(list)/DELETE             /apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies

Each pod is a real container of the test dockerd (testkit/dockerd.py): the pod's command,
workingDir, env and cpu/memory limits become the container's. One node with `node_labels`: a nodeSelector
it does not match leaves the pod Pending with PodScheduled=False/Unschedulable, as a scheduler would; an
image the engine does not have goes ErrImagePull then ImagePullBackOff (nothing is ever pulled). A pod
selected by a NetworkPolicy that denies all egress gets no network (`--network none`); other pods share
the node's network (`pod_network`, host by default, so they reach servers on 127.0.0.1). Pod labels are
stored on the container under a `k8s-standin/` prefix, so docker-side cleanups never touch a pod.

The node's kubelet ends a pod past its budgets as a kubelet does (k8s_standin_kubelet.py): the first OOM
kill in its container terminates it `OOMKilled` (a cgroup-v2 node's `memory.oom.group`), a writable layer
past the `ephemeral-storage` limit evicts it (`Evicted`); the pod is then `Failed`.

What it does not do: RBAC (one bearer token), scheduling beyond one node, restarts, resourceVersion
semantics for watches (a watch starts from the current state), finalizers, other resources.

    uv run python -m testkit.k8s_standin   # starts one, writes a kubeconfig, serves until Ctrl-C
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
import threading
import uuid
from pathlib import Path
from typing import Any

from aiohttp import web

from testkit import k8s_standin_kubelet as kubelet
from testkit.k8s_standin_exec import exit_status, pump_in, pump_out, send
from testkit.k8s_standin_objects import (
    deny_all_egress,
    docker_limits,
    docker_security,
    matches,
    pod_status,
    status_body,
)

V5, V4 = "v5.channel.k8s.io", "v4.channel.k8s.io"
TOKEN = "standin-token"
LABEL_PREFIX = "k8s-standin/"


class StandIn:
    """The API server stand-in; `start()` runs it on its own event loop thread."""

    def __init__(
        self,
        docker_host: str,
        pod_network: str = "host",
        protocols: tuple[str, ...] = (V5, V4),
        node_labels: dict[str, str] | None = None,
    ) -> None:
        self.docker_host = docker_host
        self.pod_network = pod_network
        self.protocols = protocols
        self.node_labels = {"kubernetes.io/hostname": "standin", "kubernetes.io/os": "linux", **(node_labels or {})}
        self.id = uuid.uuid4().hex[:8]
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.policies: dict[tuple[str, str], dict[str, Any]] = {}
        self.containers: dict[tuple[str, str], str] = {}
        self.created: list[dict[str, Any]] = []  # every pod ever created, for tests to look back at
        self._version = itertools.count(1)
        self._watchers: list[asyncio.Queue] = []
        self._kubelets: set[asyncio.Task] = set()
        self.url = ""
        self.loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    # -- running -----------------------------------------------------------------------------------

    def start(self) -> str:
        import docker

        self.docker = docker.DockerClient(base_url=self.docker_host, version="auto", timeout=120)
        self._thread = threading.Thread(target=self.loop.run_forever, name="k8s-standin", daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self.loop).result(30)
        return self.url

    async def _serve(self) -> None:
        app = web.Application(middlewares=[self._auth])
        pods, pol = "/api/v1/namespaces/{ns}/pods", "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"
        app.router.add_post(pods, self.create_pod)
        app.router.add_get(pods, self.list_pods)
        app.router.add_get(pods + "/{name}", self.get_pod)
        app.router.add_delete(pods + "/{name}", self.delete_pod)
        app.router.add_route("*", pods + "/{name}/exec", self.exec_pod)
        app.router.add_post(pol, self.create_policy)
        app.router.add_get(pol, self.list_policies)
        app.router.add_delete(pol + "/{name}", self.delete_policy)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        """Remove every container this stand-in made and stop serving."""
        for cid in list(self.containers.values()):
            with contextlib.suppress(Exception):
                self.docker.api.remove_container(cid, force=True)
        for task in list(self._kubelets):
            self.loop.call_soon_threadsafe(task.cancel)
        if self._runner is not None:
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self.docker.close()

    def write_kubeconfig(self, path: Path, namespace: str = "default") -> Path:
        import yaml

        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "standin",
                    "clusters": [{"name": "standin", "cluster": {"server": self.url}}],
                    "users": [{"name": "standin", "user": {"token": TOKEN}}],
                    "contexts": [
                        {
                            "name": "standin",
                            "context": {"cluster": "standin", "user": "standin", "namespace": namespace},
                        }
                    ],
                }
            )
        )
        return path

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return _status(401, "Unauthorized", "Unauthorized")
        return await handler(request)

    async def _docker(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kwargs)

    def _changed(self, kind: str, obj: dict[str, Any]) -> None:
        obj["metadata"]["resourceVersion"] = str(next(self._version))
        for q in self._watchers:
            q.put_nowait({"type": kind, "object": json.loads(json.dumps(obj))})

    # -- pods --------------------------------------------------------------------------------------

    async def create_pod(self, request: web.Request) -> web.Response:
        ns, pod = request.match_info["ns"], await request.json()
        meta = pod.setdefault("metadata", {})
        name = meta.get("name")
        if not name:
            return _status(422, "Invalid", "metadata.name is required")
        if (ns, name) in self.pods:
            return _status(409, "AlreadyExists", f'pods "{name}" already exists')
        meta |= {"namespace": ns, "uid": str(uuid.uuid4()), "creationTimestamp": "2026-01-01T00:00:00Z"}
        pod["status"] = pod_status("Pending")
        self.pods[(ns, name)] = pod
        self.created.append(pod)
        self._changed("ADDED", pod)
        asyncio.get_running_loop().create_task(self._run_pod(ns, name))
        return web.json_response(pod, status=201)

    async def _run_pod(self, ns: str, name: str) -> None:
        import docker.errors

        pod = self.pods.get((ns, name))
        if pod is None:
            return
        spec = pod["spec"]
        wanted = spec.get("nodeSelector") or {}
        if any(self.node_labels.get(k) != v for k, v in wanted.items()):
            pod["status"] = pod_status(
                "Pending",
                unschedulable=(
                    "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. "
                    "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
                ),
            )
            self._changed("MODIFIED", pod)
            return
        c = spec["containers"][0]
        try:
            await self._docker(self.docker.images.get, c["image"])
        except docker.errors.ImageNotFound:
            msg = f'failed to pull and unpack image "{c["image"]}": not found (the stand-in never pulls)'
            pod["status"] = pod_status("Pending", waiting=("ErrImagePull", msg))
            self._changed("MODIFIED", pod)
            await asyncio.sleep(0.3)
            backoff = f'Back-off pulling image "{c["image"]}"'
            pod["status"] = pod_status("Pending", waiting=("ImagePullBackOff", backoff))
            self._changed("MODIFIED", pod)
            return
        isolated = any(
            p["metadata"]["namespace"] == ns and deny_all_egress(p, pod["metadata"].get("labels") or {})
            for p in self.policies.values()
        )
        labels = {LABEL_PREFIX + k: v for k, v in (pod["metadata"].get("labels") or {}).items()}
        labels |= {"k8s-standin": self.id, "k8s-standin.pod": f"{ns}/{name}"}
        kwargs = dict(
            image=c["image"],
            entrypoint=c.get("command"),
            command=c.get("args") or [],
            detach=True,
            working_dir=c.get("workingDir"),
            labels=labels,
            environment={e["name"]: e.get("value", "") for e in c.get("env") or []},
            network_mode="none" if isolated else self.pod_network,
            **docker_limits(c),
            **docker_security(c),
        )
        if not isolated and self.pod_network != "host":
            kwargs["hostname"] = name
        try:
            container = await self._docker(self.docker.containers.create, **kwargs)
            self.containers[(ns, name)] = container.id
            await self._docker(container.start)
        except docker.errors.APIError as e:
            pod["status"] = pod_status("Pending", waiting=("CreateContainerError", str(e.explanation or e)))
            self._changed("MODIFIED", pod)
            return
        if (ns, name) not in self.pods:  # deleted while it started
            await self._docker(self.docker.api.remove_container, container.id, force=True)
            self.containers.pop((ns, name), None)
            return
        pod["status"] = pod_status("Running")
        self._changed("MODIFIED", pod)
        task = asyncio.get_running_loop().create_task(kubelet.watch(self, ns, name, container.id, c))
        self._kubelets.add(task)  # the kubelet's budgets: OOMKilled, evicted past ephemeral-storage
        task.add_done_callback(self._kubelets.discard)

    async def get_pod(self, request: web.Request) -> web.Response:
        pod = self.pods.get((request.match_info["ns"], request.match_info["name"]))
        if pod is None:
            return _status(404, "NotFound", f'pods "{request.match_info["name"]}" not found')
        return web.json_response(pod)

    async def delete_pod(self, request: web.Request) -> web.Response:
        key = (request.match_info["ns"], request.match_info["name"])
        pod = self.pods.pop(key, None)
        if pod is None:
            return _status(404, "NotFound", f'pods "{key[1]}" not found')
        cid = self.containers.pop(key, None)
        if cid:
            with contextlib.suppress(Exception):
                await self._docker(self.docker.api.remove_container, cid, force=True)
        self._changed("DELETED", pod)
        return web.json_response(pod)

    async def list_pods(self, request: web.Request) -> web.StreamResponse:
        ns, q = request.match_info["ns"], request.query
        sel, fields = q.get("labelSelector", ""), q.get("fieldSelector", "")
        items = [p for (n, _), p in self.pods.items() if n == ns and matches(p, sel, fields)]
        if q.get("watch", "").lower() not in ("true", "1"):
            return web.json_response(
                {
                    "apiVersion": "v1",
                    "kind": "PodList",
                    "metadata": {"resourceVersion": str(next(self._version))},
                    "items": items,
                }
            )
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        queue: asyncio.Queue = asyncio.Queue()
        self._watchers.append(queue)
        try:
            await self._stream_events(resp, queue, items, ns, sel, fields, float(q.get("timeoutSeconds", "300")))
        except ConnectionResetError:
            pass  # the client stopped watching
        finally:
            self._watchers.remove(queue)
        with contextlib.suppress(ConnectionResetError):
            await resp.write_eof()
        return resp

    async def _stream_events(
        self,
        resp: web.StreamResponse,
        queue: asyncio.Queue,
        items: list[dict[str, Any]],
        ns: str,
        sel: str,
        fields: str,
        timeout: float,
    ) -> None:
        for p in items:
            await resp.write(json.dumps({"type": "ADDED", "object": p}).encode() + b"\n")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while True:
                    event = await queue.get()
                    obj = event["object"]
                    if obj["metadata"]["namespace"] == ns and matches(obj, sel, fields):
                        await resp.write(json.dumps(event).encode() + b"\n")

    # -- network policies --------------------------------------------------------------------------

    async def create_policy(self, request: web.Request) -> web.Response:
        ns, pol = request.match_info["ns"], await request.json()
        name = pol.get("metadata", {}).get("name")
        if (ns, name) in self.policies:
            return _status(409, "AlreadyExists", f'networkpolicies.networking.k8s.io "{name}" already exists')
        pol["metadata"] |= {"namespace": ns, "uid": str(uuid.uuid4()), "creationTimestamp": "2026-01-01T00:00:00Z"}
        self.policies[(ns, name)] = pol
        return web.json_response(pol, status=201)

    async def list_policies(self, request: web.Request) -> web.Response:
        ns, sel = request.match_info["ns"], request.query.get("labelSelector", "")
        items = [p for (n, _), p in self.policies.items() if n == ns and matches(p, sel, "")]
        return web.json_response(
            {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicyList", "metadata": {}, "items": items}
        )

    async def delete_policy(self, request: web.Request) -> web.Response:
        pol = self.policies.pop((request.match_info["ns"], request.match_info["name"]), None)
        if pol is None:
            return _status(404, "NotFound", f'networkpolicies "{request.match_info["name"]}" not found')
        return web.json_response(status_body(200, "", "Success"))

    # -- exec --------------------------------------------------------------------------------------

    async def exec_pod(self, request: web.Request) -> web.StreamResponse:
        key = (request.match_info["ns"], request.match_info["name"])
        pod, cid = self.pods.get(key), self.containers.get(key)
        if pod is None:
            return _status(404, "NotFound", f'pods "{key[1]}" not found')
        if cid is None or pod["status"]["phase"] != "Running":
            return _status(400, "BadRequest", f"pod {key[1]} is not running")
        argv = request.query.getall("command", [])
        stdin = request.query.get("stdin", "").lower() in ("true", "1")
        ws = web.WebSocketResponse(protocols=self.protocols, max_msg_size=16 << 20)
        await ws.prepare(request)
        api = self.docker.api
        try:
            exec_id = (await self._docker(api.exec_create, cid, argv, stdin=stdin, stdout=True, stderr=True))["Id"]
            sock = await self._docker(api.exec_start, exec_id, socket=True)
        except Exception as e:  # the container is gone
            await send(ws, bytes([3]) + json.dumps(status_body(500, "InternalError", str(e))).encode())
            await ws.close()
            return ws
        raw: socket.socket = getattr(sock, "_sock", sock)
        raw.setblocking(False)
        out = asyncio.get_running_loop().create_task(pump_out(raw, ws))
        inp = asyncio.get_running_loop().create_task(pump_in(raw, ws))
        await asyncio.wait({out, inp}, return_when=asyncio.FIRST_COMPLETED)
        if out.done() and not ws.closed:
            code = (await self._docker(api.exec_inspect, exec_id)).get("ExitCode")
            await send(ws, bytes([3]) + json.dumps(exit_status(code)).encode())
            await ws.close()
        inp.cancel()
        out.cancel()
        with contextlib.suppress(Exception):
            raw.close()
        return ws


def _status(code: int, reason: str, message: str) -> web.Response:
    return web.json_response(status_body(code, reason, message), status=code)


if __name__ == "__main__":
    import tempfile

    from testkit.dockerd import ensure_dockerd

    standin = StandIn(ensure_dockerd().docker_host)
    print(standin.start())
    cfg = standin.write_kubeconfig(Path(tempfile.mkdtemp(prefix="k8s-standin-")) / "kubeconfig")
    print(f"export KUBECONFIG={cfg}")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        standin.stop()
