"""The exec stream of the kubernetes backend: one WebSocket per command, opened by the official client.

The API server speaks `v5.channel.k8s.io` (or `v4.channel.k8s.io` before Kubernetes 1.30): every binary
message starts with a channel byte, 0 stdin, 1 stdout, 2 stderr, 3 the final status (JSON, with the exit
code), and in v5 255 "close channel". v4 cannot close stdin, so data we send is always read by a
`head -c <size>` that ends by itself. `kubernetes.stream.stream` opens the socket (auth, TLS, proxies);
frames are read here directly, so nothing is buffered twice and a timeout never waits on the client.
"""

from __future__ import annotations

import contextlib
import json
import select
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

from mimo_core.errors import SandboxError

STDIN, STDOUT, STDERR, ERROR, CLOSE = 0, 1, 2, 3, 255
ENDED = -1  # pseudo-channel: the stream is over
_CHUNK = 1 << 20
V5 = "v5.channel.k8s.io"


class ExecStream:
    """One exec: send stdin, read (channel, payload) frames, then the exit code from the status frame."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.sock = ws.sock  # websocket-client's WebSocket
        self.v5 = ws.subprotocol == V5
        self.status: dict[str, Any] | None = None
        self.ended = False

    def send(self, data: bytes) -> None:
        from websocket import ABNF

        for i in range(0, len(data), _CHUNK):
            self.sock.send(bytes([STDIN]) + data[i : i + _CHUNK], opcode=ABNF.OPCODE_BINARY)

    def close_stdin(self) -> None:
        """v5 only (v4 has no way): the command sees end of input."""
        from websocket import ABNF

        if self.v5:
            self.sock.send(bytes([CLOSE, STDIN]), opcode=ABNF.OPCODE_BINARY)

    def frame(self, timeout: float) -> tuple[int, bytes] | None:
        """The next (channel, payload); (ENDED, b"") once the stream is over; None if nothing came in time."""
        from websocket import ABNF, WebSocketException

        if self.ended:
            return ENDED, b""
        raw = self.sock.sock
        if raw is None:
            self.ended = True
            return ENDED, b""
        pending = isinstance(raw, ssl.SSLSocket) and raw.pending() > 0
        if not pending and not select.select([raw], [], [], max(0.0, timeout))[0]:
            return None
        try:
            op, fr = self.sock.recv_data_frame(True)
        except (WebSocketException, OSError):
            self.ended = True
            return ENDED, b""
        if op == ABNF.OPCODE_CLOSE:
            self.ended = True
            return ENDED, b""
        data = fr.data if isinstance(fr.data, bytes) else str(fr.data).encode()
        if op not in (ABNF.OPCODE_BINARY, ABNF.OPCODE_TEXT) or not data:
            return CLOSE, b""  # ping/pong or an empty message: nothing for the caller
        if data[0] == ERROR:
            with contextlib.suppress(ValueError):
                self.status = json.loads(data[1:] or b"{}")
        return data[0], data[1:]

    def returncode(self) -> int | None:
        """0 on Success, the ExitCode cause otherwise; None when no status came (stream cut)."""
        if self.status is None:
            return None
        if self.status.get("status") == "Success":
            return 0
        for cause in (self.status.get("details") or {}).get("causes") or []:
            if cause.get("reason") == "ExitCode":
                with contextlib.suppress(ValueError):
                    return int(cause.get("message", ""))
        return 126  # the command could not run at all (status message says why)

    def close(self) -> None:
        self.ended = True
        with contextlib.suppress(Exception):
            self.ws.close()


def open_exec(core: Any, namespace: str, name: str, argv: list[str], stdin: bool) -> ExecStream:
    from kubernetes.client.rest import ApiException
    from kubernetes.stream import stream

    try:
        ws = stream(
            core.connect_get_namespaced_pod_exec,
            name,
            namespace,
            command=argv,
            container="sandbox",
            stdin=stdin,
            stdout=True,
            stderr=True,
            tty=False,
            _preload_content=False,
            binary=True,
        )
    except Exception as e:  # ApiException; on a refused handshake the client itself trips (e.body is None)
        cause: BaseException | None = e
        while cause is not None and not isinstance(cause, ApiException):
            cause = cause.__context__
        why = str(cause.reason if isinstance(cause, ApiException) else e).split(" -+-+- ")
        detail = why[-1] if len(why) > 2 else why[0]
        raise SandboxError(f"pod {namespace}/{name} cannot run commands: {why[0]}: {detail[:300]}") from None
    return ExecStream(ws)


class StreamClient:
    """Where one environment opens its exec streams. `kubernetes.stream.stream` swaps its ApiClient's
    `request` for a websocket call while it connects: a REST call from another thread on that ApiClient
    at that moment goes out as a websocket handshake and fails (under load a stop's pod delete did, while
    the signal thread opened its `kill`, and the pod was left), and two opens at once can leave the swap
    in place for good. So streams get an ApiClient of their own and connect one at a time (the handshake
    only: open streams run side by side)."""

    def __init__(self, conf: Any) -> None:
        from kubernetes import client

        self.api = client.ApiClient(conf)
        self.core = client.CoreV1Api(self.api)
        self.lock = threading.Lock()

    def open(self, namespace: str, name: str, argv: list[str], stdin: bool) -> ExecStream:
        with self.lock:
            return open_exec(self.core, namespace, name, argv, stdin)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.api.close()


class ExecOutcome:
    def __init__(self) -> None:
        self.returncode: int | None = None
        self.timed_out = False
        self.stderr = bytearray()
        self.status_message = ""


def run(
    stream: ExecStream,
    stdin: bytes | None,
    timeout: float,
    on_stdout: Callable[[bytes], object],
    on_timeout: Callable[[], None] | None = None,
    grace: float = 5.0,
) -> ExecOutcome:
    """Feed `stdin`, pass stdout on, keep stderr; at `timeout` call `on_timeout` (kill the command) and
    wait `grace` more seconds for the stream to end. The stream is closed on return."""
    out = ExecOutcome()
    deadline = time.monotonic() + timeout
    try:
        if stdin is not None:
            stream.send(stdin)
            stream.close_stdin()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if out.timed_out or on_timeout is None:
                    out.timed_out = True
                    break
                out.timed_out = True
                on_timeout()
                deadline = time.monotonic() + grace
                continue
            got = stream.frame(min(remaining, 1.0))
            if got is None:
                continue
            channel, payload = got
            if channel == ENDED:
                break
            if channel == STDOUT:
                on_stdout(payload)
            elif channel == STDERR and len(out.stderr) < 65536:
                out.stderr += payload
    finally:
        stream.close()
    out.returncode = stream.returncode()
    if stream.status and stream.status.get("status") != "Success":
        out.status_message = str(stream.status.get("message", ""))
    return out
