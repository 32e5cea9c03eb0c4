"""The stand-in's envd (e2b_standin.py): the in-sandbox daemon's API, served for every sandbox at one URL
(the SDK's `E2B_SANDBOX_URL`), which sandbox told by the `E2b-Sandbox-Id` header the SDK sends.

Process (Connect, served by connectrpc's own WSGI application generated from envd's proto, the one the
`e2b` wheel ships): `Start` (server stream: start, data, end events), `SendInput`, `CloseStdin`,
`SendSignal`, `List`. Each process is a `docker exec` in the sandbox's container, its stdin the exec's
hijacked socket; the pid given out is the process' pid inside the container (`NSpid`). Files: `GET
/files?path=` and `POST /files?path=` with an `application/octet-stream` body (the SDK's upload when
envd is 0.5.7 or later and asked for it), `GET /health`. A request without the sandbox's access token is
401; a sandbox that is not there (never made, or killed) is a 502 naming it "not found", as E2B's proxy
answers.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import signal
import socket
import tarfile
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from e2b.envd.process import process_pb
from e2b.envd.process.process_connect import ProcessSync, ProcessWSGIApplication
from protobuf import Oneof

PB = process_pb
# Each command waits for one byte on stdin before it execs: the engine can lose the output of an exec that
# ends before its attach is up, so the stand-in sends that byte once it holds the exec's socket.
GO = 'dd bs=1 count=1 of=/dev/null 2>/dev/null; exec "$@"'
Event = PB.ProcessEvent


class Proc:
    """One process: its exec, socket and host pid."""

    def __init__(self, exec_id: str, sock: socket.socket, host_pid: int, pid: int, config: Any) -> None:
        self.exec_id, self.sock, self.host_pid, self.pid, self.config = exec_id, sock, host_pid, pid, config
        self.lock = threading.Lock()


def _ns_pid(host_pid: int) -> int:
    try:
        for line in Path(f"/proc/{host_pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    except OSError:
        pass
    return host_pid


def _user(ctx: Any) -> str:
    auth = ctx.request_headers.get("authorization", "")
    if auth.startswith("Basic "):
        return base64.b64decode(auth[6:]).decode().partition(":")[0] or "root"
    return "root"


class Envd(ProcessSync):
    """What the Process service and /files do, for the stand-in's sandboxes (`standin.sandboxes`). The
    calls it does not override (Connect, Update, StreamInput) answer UNIMPLEMENTED."""

    def __init__(self, standin: Any) -> None:
        self.standin = standin
        self.procs: dict[tuple[str, int], Proc] = {}
        self.rpc = ProcessWSGIApplication(self)

    # -- which sandbox -----------------------------------------------------------------------------

    def _sandbox(self, headers: Any) -> Any:
        sid = headers.get("e2b-sandbox-id", "")
        box = self.standin.sandboxes.get(sid)
        if box is None:
            raise ConnectError(Code.UNAVAILABLE, f"The sandbox {sid} was not found")
        if headers.get("x-access-token") != box.token:
            raise ConnectError(Code.UNAUTHENTICATED, "invalid access token")
        return box

    def _proc(self, box: Any, selector: Any) -> Proc:
        pid = selector.selector.value if selector and selector.selector else None
        proc = self.procs.get((box.id, pid))
        if proc is None:
            raise ConnectError(Code.NOT_FOUND, f"process with pid {pid} not found")
        return proc

    # -- the Process service -----------------------------------------------------------------------

    def start(self, request: Any, ctx: Any) -> Iterator[Any]:
        box = self._sandbox(ctx.request_headers)
        cfg = request.process
        api = self.standin.docker.api
        env = {**box.envs, **dict(cfg.envs)}
        exec_id = api.exec_create(
            box.container,
            ["/bin/sh", "-c", GO, "sh", cfg.cmd, *cfg.args],
            environment=env,
            workdir=cfg.cwd or None,
            user=_user(ctx),
            stdin=True,
            tty=False,
        )["Id"]
        sock = api.exec_start(exec_id, socket=True)
        raw: socket.socket = getattr(sock, "_sock", sock)
        host_pid = 0
        for _ in range(200):
            host_pid = api.exec_inspect(exec_id).get("Pid") or 0
            if host_pid:
                break
            time.sleep(0.005)
        proc = Proc(exec_id, raw, host_pid, _ns_pid(host_pid), cfg)
        self.procs[(box.id, proc.pid)] = proc
        with contextlib.suppress(OSError):
            raw.sendall(b"g")  # the attach is up: the command may start (GO)
            if not request.stdin:
                raw.shutdown(socket.SHUT_WR)
        try:
            yield PB.StartResponse(event=Event(event=Oneof("start", Event.StartEvent(pid=proc.pid))))
            buf = bytearray()
            raw.settimeout(0.25)
            quiet = 0  # polls without data since the process was seen ended
            while True:
                try:
                    chunk = raw.recv(65536)
                    quiet = 0
                except TimeoutError:  # the engine keeps an exec's stream open while its stdin is: ask
                    if quiet == 0 and api.exec_inspect(exec_id).get("Running"):
                        continue
                    quiet += 1  # ended: what it wrote may still be on its way for a moment
                    if quiet < 4:
                        continue
                    chunk = b""
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                buf += chunk
                while len(buf) >= 8 and len(buf) >= 8 + (size := int.from_bytes(buf[4:8], "big")):
                    kind, payload = buf[0], bytes(buf[8 : 8 + size])
                    del buf[: 8 + size]
                    out = Oneof("stderr" if kind == 2 else "stdout", payload)
                    yield PB.StartResponse(event=Event(event=Oneof("data", Event.DataEvent(output=out))))
            code = None
            for _ in range(400):
                info = api.exec_inspect(exec_id)
                if not info.get("Running"):
                    code = info.get("ExitCode")
                    break
                time.sleep(0.005)
            code = -1 if code is None else code
            status = f"exit status {code}" if code < 128 else f"signal: {signal.Signals(code - 128).name.lower()}"
            end = Event.EndEvent(exit_code=code, exited=code < 128, status=status)
            yield PB.StartResponse(event=Event(event=Oneof("end", end)))
        finally:
            self.procs.pop((box.id, proc.pid), None)
            with contextlib.suppress(OSError):
                raw.close()

    def send_input(self, request: Any, ctx: Any) -> Any:
        proc = self._proc(self._sandbox(ctx.request_headers), request.process)
        data = request.input.input.value if request.input and request.input.input else b""
        with proc.lock:
            try:
                proc.sock.sendall(data)
            except OSError as e:
                raise ConnectError(Code.FAILED_PRECONDITION, f"stdin is closed: {e}") from None
        return PB.SendInputResponse()

    def close_stdin(self, request: Any, ctx: Any) -> Any:
        proc = self._proc(self._sandbox(ctx.request_headers), request.process)
        with contextlib.suppress(OSError):
            proc.sock.shutdown(socket.SHUT_WR)
        return PB.CloseStdinResponse()

    def send_signal(self, request: Any, ctx: Any) -> Any:
        proc = self._proc(self._sandbox(ctx.request_headers), request.process)
        sig = signal.SIGKILL if request.signal == PB.Signal.SIGKILL else signal.SIGTERM
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.host_pid, sig)
        return PB.SendSignalResponse()

    def list(self, request: Any, ctx: Any) -> Any:
        box = self._sandbox(ctx.request_headers)
        return PB.ListResponse(
            processes=[
                PB.ProcessInfo(config=p.config, pid=p.pid) for (sid, _), p in self.procs.items() if sid == box.id
            ]
        )

    # -- plain HTTP: /files and /health --------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if environ.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked":  # wsgiref leaves it to the app
            environ["wsgi.input"] = Dechunk(environ["wsgi.input"])
        elif environ.get("CONTENT_LENGTH"):  # wsgiref's input is the socket: past the body a read would block
            environ["wsgi.input"] = Limited(environ["wsgi.input"], int(environ["CONTENT_LENGTH"]))
        if path.startswith("/process.Process/"):
            return self.rpc(environ, start_response)
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        try:
            box = self._sandbox(headers)
        except ConnectError as e:
            status = "401 Unauthorized" if e.code == Code.UNAUTHENTICATED else "502 Bad Gateway"
            return _json(start_response, status, {"code": int(status[:3]), "message": e.message})
        if path == "/health":
            start_response("204 No Content", [])
            return [b""]
        if path != "/files":
            return _json(start_response, "404 Not Found", {"code": 404, "message": f"{path} not found"})
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
        target = (query.get("path") or [""])[0]
        if environ["REQUEST_METHOD"] == "GET":
            return self._download(box, target, start_response)
        size = int(environ.get("CONTENT_LENGTH") or 0)
        data = environ["wsgi.input"].read(size) if size else b""
        return self._upload(box, target, data, start_response)

    def _download(self, box: Any, target: str, start_response: Any) -> Any:
        api = self.standin.docker.api
        exec_id = api.exec_create(box.container, ["cat", "--", target], user="root")["Id"]
        data, err = api.exec_start(exec_id, demux=True)
        if api.exec_inspect(exec_id).get("ExitCode"):
            message = (err or b"").decode(errors="replace").strip()[:300]
            if "Is a directory" in message:
                return _json(
                    start_response, "400 Bad Request", {"code": 400, "message": f"path '{target}' is a directory"}
                )
            return _json(start_response, "404 Not Found", {"code": 404, "message": f"path '{target}' does not exist"})
        data = data or b""
        start_response("200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(len(data)))])
        return [data]

    def _upload(self, box: Any, target: str, data: bytes, start_response: Any) -> Any:
        """Written as envd writes: parents made, an existing file truncated (its mode kept)."""
        api, name = self.standin.docker.api, f".e2b-upload-{os.urandom(6).hex()}"
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o600
            tar.addfile(info, io.BytesIO(data))
        api.put_archive(box.container, "/tmp", buf.getvalue())
        q = target.replace("'", "'\\''")
        script = f"mkdir -p \"$(dirname '{q}')\" && cat /tmp/{name} > '{q}'; r=$?; rm -f /tmp/{name}; exit $r"
        exec_id = api.exec_create(box.container, ["sh", "-c", script], user="root")["Id"]
        out = api.exec_start(exec_id)
        if api.exec_inspect(exec_id).get("ExitCode"):
            message = out.decode(errors="replace").strip()[:300]
            return _json(start_response, "400 Bad Request", {"code": 400, "message": message})
        entry = {"name": target.rsplit("/", 1)[-1], "type": "file", "path": target}
        return _json(start_response, "200 OK", [entry])


class Limited:
    """A request body of a known length, then EOF."""

    def __init__(self, raw: Any, size: int) -> None:
        self.raw, self.left = raw, size

    def read(self, size: int = -1) -> bytes:
        n = self.left if size < 0 else min(size, self.left)
        data = self.raw.read(n) if n > 0 else b""
        self.left -= len(data)
        return data


class Dechunk:
    """A chunked request body (the SDK streams Start's request) read as its plain bytes, then EOF."""

    def __init__(self, raw: Any) -> None:
        self.raw, self.left, self.done = raw, 0, False

    def read(self, size: int = -1) -> bytes:
        out = bytearray()
        while not self.done and (size < 0 or len(out) < size):
            if self.left == 0:
                line = self.raw.readline()
                self.left = int(line.split(b";")[0].strip() or b"0", 16)
                if self.left == 0:
                    while self.raw.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    self.done = True
                    break
            want = self.left if size < 0 else min(self.left, size - len(out))
            got = self.raw.read(want)
            if not got:
                self.done = True
                break
            out += got
            self.left -= len(got)
            if self.left == 0:
                self.raw.readline()
        return bytes(out)


def _json(start_response: Any, status: str, body: Any) -> list[bytes]:
    data = json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]
