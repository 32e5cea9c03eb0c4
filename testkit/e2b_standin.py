"""An E2B API stand-in for tests and benches: no E2B (or CubeSandbox) account is reachable from here.

It serves, on 127.0.0.1, what the `e2b` SDK (2.63) sends, recorded from the SDK's own code and traffic,
so the real SDK talks to it unchanged through `E2B_API_URL` and `E2B_SANDBOX_URL` (`sdk_env()`):

    control plane (X-API-KEY)   POST /v2/sandboxes                create from a template
                                GET  /v2/sandboxes?metadata=&state=  list, metadata filter
                                GET  /sandboxes/{id}              info
                                POST /sandboxes/{id}/connect      connect (extends the timeout)
                                POST /sandboxes/{id}/timeout      set the timeout
                                DELETE /sandboxes/{id}            kill
    envd (X-Access-Token, E2b-Sandbox-Id)                          testkit/e2b_standin_envd.py

Each sandbox is a real container of the test dockerd (testkit/dockerd.py), made from the image its
template names (`templates`: template id -> image), PID 1 a sleep loop; `allow_internet_access: false`
gives it no network (`--network none`), others share the host's. Sandboxes end when their timeout
passes, as on E2B. It rejects what the service would: a bad API key (401), an unknown template (404),
calls on a killed or unknown sandbox (404 on the control plane; 502 "was not found" from envd's proxy).
Containers carry `e2b-standin/` labels, so docker-side cleanups never touch a sandbox.

What it does not do: templates built from Dockerfiles, pause/resume, snapshots, volumes, PTYs, the
Filesystem RPC service (list, stat, watch), per-sandbox CPU/memory (E2B sets those in the template).

    uv run python -m testkit.e2b_standin   # starts one on the test dockerd, prints its variables
"""

from __future__ import annotations

import contextlib
import datetime
import json
import secrets
import socketserver
import threading
import time
import urllib.parse
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from testkit.e2b_standin_envd import Envd, _json

API_KEY = "e2b_standin_0123456789abcdef0123456789abcdef"
ENVD_VERSION = "0.6.4"
LABEL_PREFIX = "e2b-standin/"
KEEPALIVE = "while :; do sleep 86400 & wait $!; done"


class Box:
    def __init__(self, sid: str, template: str, container: str, body: dict[str, Any], timeout: int) -> None:
        self.id, self.template, self.container = sid, template, container
        self.metadata: dict[str, str] = dict(body.get("metadata") or {})
        self.envs: dict[str, str] = dict(body.get("envVars") or {})
        self.token = secrets.token_hex(16)
        self.started = time.time()
        self.end = self.started + timeout
        self.network = body.get("allow_internet_access", True) is not False


class _Threading(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.UTC).isoformat().replace("+00:00", "Z")


class StandIn:
    """The control plane and envd, each on its own port; `start()` serves them from threads."""

    def __init__(self, docker_host: str, templates: dict[str, str], api_key: str = API_KEY) -> None:
        self.docker_host, self.templates, self.api_key = docker_host, dict(templates), api_key
        self.sandboxes: dict[str, Box] = {}
        self.killed: set[str] = set()
        self.requests: list[tuple[str, str]] = []  # (method, path) of every control-plane call
        self.created: list[dict[str, Any]] = []  # every create body, for tests to look back at
        self.lock = threading.Lock()
        self.id = secrets.token_hex(4)
        self.api_url = self.sandbox_url = ""
        self._servers: list[Any] = []
        self._stop = threading.Event()

    def start(self) -> StandIn:
        import docker

        self.docker = docker.DockerClient(base_url=self.docker_host, version="auto", timeout=120)
        self.envd = Envd(self)
        for app in (self._api, self.envd):
            server = make_server("127.0.0.1", 0, app, server_class=_Threading, handler_class=_Quiet)
            threading.Thread(target=server.serve_forever, name="e2b-standin", daemon=True).start()
            self._servers.append(server)
        self.api_url = f"http://127.0.0.1:{self._servers[0].server_port}"
        self.sandbox_url = f"http://127.0.0.1:{self._servers[1].server_port}"
        threading.Thread(target=self._reaper, name="e2b-standin-reaper", daemon=True).start()
        return self

    def sdk_env(self) -> dict[str, str]:
        """The variables that point the real SDK (and mimoagent's e2b backend) here."""
        return {"E2B_API_URL": self.api_url, "E2B_SANDBOX_URL": self.sandbox_url, "E2B_API_KEY": self.api_key}

    def stop(self) -> None:
        self._stop.set()
        for sid in list(self.sandboxes):
            self._kill(sid)
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self.docker.close()

    def _reaper(self) -> None:
        while not self._stop.wait(0.5):
            for box in list(self.sandboxes.values()):
                if box.end < time.time():
                    self._kill(box.id)

    def _kill(self, sid: str) -> bool:
        with self.lock:
            box = self.sandboxes.pop(sid, None)
            if box is None:
                return False
            self.killed.add(sid)
        with contextlib.suppress(Exception):
            self.docker.api.remove_container(box.container, force=True)
        return True

    def containers(self, **metadata: str) -> list[str]:
        """Names of the containers of this stand-in's sandboxes (with that metadata), for leftover checks."""
        labels = [f"{LABEL_PREFIX}standin={self.id}", *(f"{LABEL_PREFIX}{k}={v}" for k, v in metadata.items())]
        return [c.name for c in self.docker.containers.list(all=True, filters={"label": labels})]

    def leftovers(self, run_id: str) -> list[str]:
        """What of a run's sandboxes still exists: sandboxes the API lists, their containers."""
        boxes = [
            f"sandbox {b.id}" for b in list(self.sandboxes.values()) if b.metadata.get("mimoagent.run_id") == run_id
        ]
        return boxes + [f"container {c}" for c in self.containers(**{"mimoagent.run_id": run_id})]

    # -- the control plane ---------------------------------------------------------------------------

    def _api(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        self.requests.append((method, path))
        if environ.get("HTTP_X_API_KEY") != self.api_key:
            return _json(start_response, "401 Unauthorized", {"code": 401, "message": "Invalid API key"})
        size = int(environ.get("CONTENT_LENGTH") or 0)
        body = json.loads(environ["wsgi.input"].read(size) or b"{}") if size else {}
        parts = path.strip("/").split("/")
        if method == "POST" and path == "/v2/sandboxes":
            return self._create(body, start_response)
        if method == "GET" and path == "/v2/sandboxes":
            return self._list(urllib.parse.parse_qs(environ.get("QUERY_STRING", "")), start_response)
        if len(parts) >= 2 and parts[0] == "sandboxes":
            box = self.sandboxes.get(parts[1])
            if box is None:
                message = f"sandbox \"{parts[1]}\" doesn't exist or you don't have access to it"
                return _json(start_response, "404 Not Found", {"code": 404, "message": message})
            if method == "DELETE" and len(parts) == 2:
                self._kill(box.id)
                start_response("204 No Content", [])
                return [b""]
            if method == "GET" and len(parts) == 2:
                return _json(start_response, "200 OK", self._listed(box))
            if method == "POST" and parts[2:] in (["timeout"], ["connect"]):
                box.end = time.time() + int(body.get("timeout") or 300)
                if parts[2] == "timeout":
                    start_response("204 No Content", [])
                    return [b""]
                return _json(start_response, "200 OK", self._created(box))
        return _json(start_response, "404 Not Found", {"code": 404, "message": f"{method} {path} not found"})

    def _create(self, body: dict[str, Any], start_response: Any) -> list[bytes]:
        template = str(body.get("templateID") or "")
        image = self.templates.get(template)
        if image is None:
            message = f"template '{template}' not found"
            return _json(start_response, "404 Not Found", {"code": 404, "message": message})
        self.created.append(body)
        sid = "i" + secrets.token_hex(10)
        timeout = int(body.get("timeout") or 300)
        box = Box(sid, template, "", body, timeout)
        container = self.docker.api.create_container(
            image,
            ["/bin/sh", "-c", KEEPALIVE],
            name=f"e2b-standin-{sid}",
            labels={
                f"{LABEL_PREFIX}sandbox": sid,
                f"{LABEL_PREFIX}standin": self.id,
                **{f"{LABEL_PREFIX}{k}": v for k, v in box.metadata.items()},
            },
            environment=box.envs,
            host_config=self.docker.api.create_host_config(network_mode="host" if box.network else "none"),
        )["Id"]
        box.container = container
        self.docker.api.start(container)
        with self.lock:
            self.sandboxes[sid] = box
        return _json(start_response, "201 Created", self._created(box))

    def _created(self, box: Box) -> dict[str, Any]:
        return {
            "templateID": box.template,
            "sandboxID": box.id,
            "clientID": "standin",
            "envdVersion": ENVD_VERSION,
            "envdAccessToken": box.token,
            "domain": None,
        }

    def _listed(self, box: Box) -> dict[str, Any]:
        return {
            "templateID": box.template,
            "sandboxID": box.id,
            "clientID": "standin",
            "startedAt": _iso(box.started),
            "endAt": _iso(box.end),
            "cpuCount": 2,
            "memoryMB": 512,
            "diskSizeMB": 1024,
            "state": "running",
            "envdVersion": ENVD_VERSION,
            "metadata": box.metadata,
        }

    def _list(self, query: dict[str, list[str]], start_response: Any) -> list[bytes]:
        wanted: dict[str, str] = {}
        for raw in query.get("metadata", []):
            for k, v in urllib.parse.parse_qsl(raw):
                wanted[urllib.parse.unquote(k)] = urllib.parse.unquote(v)
        states = ",".join(query.get("state", ["running"])).split(",")
        found = [
            self._listed(b)
            for b in list(self.sandboxes.values())
            if "running" in states and all(b.metadata.get(k) == v for k, v in wanted.items())
        ]
        return _json(start_response, "200 OK", found)


def main() -> None:
    from testkit.dockerd import BASE_IMAGE, use_dockerd

    with use_dockerd() as info:
        standin = StandIn(info.docker_host, {"base": BASE_IMAGE}).start()
        for k, v in standin.sdk_env().items():
            print(f"export {k}={v}")
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
        standin.stop()


if __name__ == "__main__":
    main()
