"""A threaded HTTP server on a free loopback port, run on a daemon thread and used as a context manager.

The CLI agents' recording proxy and the tests' scripted model server are both one: the subclass builds
its request handler (bound to itself) in `start`, and gets stop, the context protocol and its address
from here.
"""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class LoopbackServer:
    _server: ThreadingHTTPServer | None = None

    def start(self) -> Self:
        raise NotImplementedError

    def _serve(
        self, handler: type[BaseHTTPRequestHandler], bind: str, thread_name: str, listening: socket.socket | None = None
    ) -> None:
        """Serve on a free port of `bind`, or on `listening`, a socket already bound and listening (one
        made inside a sandbox's network namespace)."""
        if listening is None:
            self._server = ThreadingHTTPServer((bind, 0), handler)
        else:
            self._server = ThreadingHTTPServer(listening.getsockname()[:2], handler, bind_and_activate=False)
            self._server.socket.close()
            self._server.socket = listening
            self._server.server_address = listening.getsockname()[:2]
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name=thread_name, daemon=True
        ).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) it listens on."""
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        host, port = self._server.server_address[:2]
        return str(host), int(port)
