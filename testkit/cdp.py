"""One headless Chromium driven over the DevTools protocol: navigate, run script in the page (fill a form,
click), read the DOM, take screenshots, read paint timing. One browser serves many page loads, where
`chromium.dump_dom` starts a browser per page (~1-3 s each)."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testkit.chromium import FLAGS, ensure_chromium
from testkit.processes import stop_group


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """Use as a context manager; stopped by its own process group, never by name."""

    def __init__(self, window: str = "1600,1000", timeout: float = 60):
        from websockets.sync.client import connect

        self.timeout = timeout
        self._stack = contextlib.ExitStack()
        profile = self._stack.enter_context(tempfile.TemporaryDirectory(prefix="mimo-cdp-"))
        port = _free_port()
        self.proc = subprocess.Popen(
            [
                ensure_chromium(),
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--remote-debugging-port={port}",
                f"--window-size={window}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._stack.callback(self._stop)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as resp:
                    pages = [t for t in json.load(resp) if t["type"] == "page"]
                if pages:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self._stack.close()
                raise RuntimeError("chromium's DevTools endpoint did not come up")
            time.sleep(0.2)
        self.ws = self._stack.enter_context(connect(pages[0]["webSocketDebuggerUrl"], max_size=None))
        self._id = 0
        self.events: list[dict[str, Any]] = []
        self.send("Page.enable")
        self.send("Page.setLifecycleEventsEnabled", enabled=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _stop(self) -> None:
        stop_group(self.proc, timeout=20)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """A DevTools command's result; events that arrive meanwhile are kept in `events`."""
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=self.timeout))
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def _wait_lifecycle(self, names: set[str]) -> dict[str, float]:
        seen: dict[str, float] = {}
        while True:
            for msg in self.events:
                if msg["method"] == "Page.lifecycleEvent":
                    seen.setdefault(msg["params"]["name"], msg["params"]["timestamp"])
            self.events.clear()
            if names <= seen.keys():
                return seen
            self.events.append(json.loads(self.ws.recv(timeout=self.timeout)))
            if "method" not in self.events[-1]:
                self.events.pop()

    def load(self, url: str, paint: bool = False) -> dict[str, float]:
        """Navigate and wait for the load event (and the first contentful paint with `paint`); returns the
        lifecycle events' times in ms from the moment the navigation was asked for."""
        return self._navigation(lambda: self.send("Page.navigate", url=url), paint)

    def act(self, script: str) -> dict[str, float]:
        """Run `script` in the page (e.g. pick a menu value that submits a form) and wait for the page it
        navigates to."""
        return self._navigation(lambda: self.evaluate(script), paint=False)

    def _navigation(self, trigger: Callable[[], Any], paint: bool) -> dict[str, float]:
        """Chromium stamps lifecycle events with the system's monotonic clock, which `time.monotonic()`
        reads on Linux: times are measured from before the trigger, so they include the server's work."""
        self.events.clear()
        start = time.monotonic()
        trigger()
        seen = self._wait_lifecycle({"init", "load"} | ({"firstContentfulPaint"} if paint else set()))
        times = {k: (v - start) * 1000 for k, v in seen.items()}
        if not 0 <= times["init"] <= (time.monotonic() - start) * 1000:
            raise RuntimeError("chromium's event clock is not this process's monotonic clock")
        return times

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def html(self) -> str:
        return self.evaluate("document.documentElement.outerHTML")

    def url(self) -> str:
        return self.evaluate("location.href")

    def screenshot(self, path: Path) -> Path:
        """The whole page, not just the window."""
        size = self.send("Page.getLayoutMetrics")["cssContentSize"]
        shot = self.send(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 8000), "scale": 1},
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
