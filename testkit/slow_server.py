"""A model endpoint that never finishes answering, in the ways real ones fail, on 127.0.0.1.

Modes (every path, every protocol: the body is whatever the mode sends):
- `trickle`: a 200 with a JSON Content-Length, then the body one byte per `interval`;
- `trickle_headers`: the status line and headers themselves one byte per `interval`;
- `stall`: a 200's headers, then nothing;
- `stream`: a `text/event-stream` that sends an event every `interval` and never ends;
- `endless`: a 200 with a huge Content-Length whose bytes never stop coming.

Each connection's end is recorded (`closed`): a client that gave up must also have hung up, or the server
would go on generating for it. Written on raw sockets: the slowness is the point.
"""

from __future__ import annotations

import select
import socket
import socketserver
import threading
from typing import Self

MODES = ("trickle", "trickle_headers", "stall", "stream", "endless")
_JSON = b'{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}'


class SlowServer:
    def __init__(self, mode: str, interval: float = 0.5) -> None:
        if mode not in MODES:
            raise ValueError(f"mode {mode!r}; known: {MODES}")
        self.mode, self.interval = mode, interval
        self.requests = 0
        self.closed = threading.Semaphore(0)  # released once per connection that ended
        self.stopping = threading.Event()
        self._server: socketserver.ThreadingTCPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    def __enter__(self) -> Self:
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                try:
                    owner._serve(self.request)
                except OSError:
                    pass
                finally:
                    owner.closed.release()

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def wait_closed(self, timeout: float) -> bool:
        """True once a connection has ended (the client hung up, or the server stopped)."""
        return self.closed.acquire(timeout=timeout)

    def _read_request(self, sock: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                raise OSError("client gone")
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                raise OSError("client gone")
            body += chunk
        self.requests += 1

    def _drip(self, sock: socket.socket, data: bytes) -> None:
        for i in range(len(data)):
            sock.sendall(data[i : i + 1])
            if self.stopping.wait(self.interval):
                return

    def _until_stopped(self, sock: socket.socket, piece: bytes, pause: float) -> None:
        while not self.stopping.is_set():
            sock.sendall(piece)  # raises once the client hung up
            if pause:
                self.stopping.wait(pause)

    def _serve(self, sock: socket.socket) -> None:
        sock.settimeout(None)
        self._read_request(sock)
        head = b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
        if self.mode == "trickle":
            sock.sendall(head % (b"application/json", len(_JSON)))
            self._drip(sock, _JSON)
        elif self.mode == "trickle_headers":
            self._drip(sock, head % (b"application/json", len(_JSON)) + _JSON)
        elif self.mode == "stall":
            sock.sendall(head % (b"application/json", len(_JSON)))
            while not self.stopping.wait(0.1):
                readable, _, _ = select.select([sock], [], [], 0)
                if readable and sock.recv(1) == b"":
                    return  # the client hung up
        elif self.mode == "stream":
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
            self._until_stopped(sock, b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n', self.interval)
        else:  # endless
            sock.sendall(head % (b"application/json", 10**12))
            self._until_stopped(sock, b" " * 4096, 0.001)
