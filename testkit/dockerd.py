"""A private Docker engine and a base image for tests, CI and benches, on a machine that has neither.

No engine runs on a new machine and no registry can be reached, so this module installs `docker.io`
from apt when `dockerd` is missing, starts `dockerd` with its own data root and socket (overlay2, vfs
as fallback) and builds `mimo-base:bookworm` with no pull: `debootstrap --variant=minbase` piped into
`docker import`. The rootfs tarball is cached, so a machine that keeps /var/cache/mimo skips
debootstrap. A running engine on our socket is reused as is; a file lock makes concurrent pytest
processes do the work once. Users hold the engine through `use_dockerd()`: each holds a shared lock for
as long as it runs, and the last one to leave stops the engine if a user started it (an engine started
by hand is left alone). Its data root, with the base image, stays, so the next start takes seconds.
Concurrent pytest processes and benches share one engine.

Run by hand: `uv run python -m testkit.dockerd` starts it and leaves it running, printing the
DOCKER_HOST to export; `... dockerd --stop` stops an engine the tests started, when no one uses it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

SOCKET = Path(os.environ.get("MIMO_DOCKERD_SOCKET", "/run/mimo-docker.sock"))
DOCKER_HOST = f"unix://{SOCKET}"
DATA_ROOT = Path(os.environ.get("MIMO_DOCKERD_DATA_ROOT", "/var/lib/mimo-dockerd"))
EXEC_ROOT = Path("/run/mimo-dockerd")
PIDFILE = Path("/run/mimo-dockerd.pid")
LOG = Path("/var/log/mimo-dockerd.log")
LOCK = Path("/run/mimo-dockerd.lock")
USERS_LOCK = Path("/run/mimo-dockerd.users")  # shared-locked by every user while it runs
MANAGED = Path("/run/mimo-dockerd.managed")  # present when users started the engine: the last one stops it
CACHE_DIR = Path(os.environ.get("MIMO_CACHE_DIR", "/var/cache/mimo"))
BASE_IMAGE = "mimo-base:bookworm"
# git/patch for repositories and patches, python3 for verifiers, gcc for ARVO-style C tasks.
BASE_PACKAGES = ["git", "patch", "python3", "ca-certificates", "procps", "gcc", "libc6-dev"]
BASE_KEY = hashlib.sha256(",".join(BASE_PACKAGES).encode()).hexdigest()[:12]
ROOTFS_TAR = CACHE_DIR / f"bookworm-rootfs-{BASE_KEY}.tar"  # keyed: a new package list rebuilds
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


class DockerdInfo(BaseModel):
    """What a test needs to reach the engine, plus how the setup went (for reports and benches)."""

    docker_host: str
    base_image: str
    storage_driver: str
    reused: bool  # the engine was already running
    setup_seconds: float
    steps: dict[str, float]  # seconds per step that actually ran (install, dockerd, debootstrap, import)


def _ping(timeout: float = 2.0) -> bool:
    if not SOCKET.exists():
        return False
    proc = subprocess.run(
        ["curl", "-sf", "--max-time", str(timeout), "--unix-socket", str(SOCKET), "http://d/_ping"],
        capture_output=True,
        text=True,
    )
    return proc.returncode == 0 and proc.stdout.strip() == "OK"


def _docker(*args: str, input_file: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "DOCKER_HOST": DOCKER_HOST}
    stdin = input_file.open("rb") if input_file else subprocess.DEVNULL
    try:
        proc = subprocess.run(["docker", *args], env=env, stdin=stdin, capture_output=True, text=True)
    finally:
        if input_file:
            stdin.close()
    if check and proc.returncode != 0:
        raise RuntimeError(f"docker {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc


@contextmanager
def _locked() -> Iterator[None]:
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with LOCK.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(cmd: list[str], what: str, timeout: float = 1200) -> None:
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    )
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise RuntimeError(f"{what} failed ({' '.join(cmd[:4])} ...): exit {proc.returncode}\n{tail}")


def _install_packages() -> None:
    """apt-get docker.io + debootstrap (the docker CLI comes with docker.io when none is installed)."""
    _run(["apt-get", "update", "-q"], "apt-get update")
    _run(["apt-get", "install", "-y", "-q", "docker.io", "debootstrap", "curl"], "apt-get install")


def _stop_our_dockerd() -> None:
    if not PIDFILE.exists():
        return
    try:
        pid = int(PIDFILE.read_text().strip())
        os.kill(pid, 15)
        for _ in range(100):
            os.kill(pid, 0)
            time.sleep(0.1)
    except (ValueError, ProcessLookupError):
        pass
    PIDFILE.unlink(missing_ok=True)


def _start_dockerd(driver: str) -> bool:
    """Start dockerd detached (own session, survives the test process). True when it answers."""
    _stop_our_dockerd()
    SOCKET.unlink(missing_ok=True)
    DATA_ROOT.mkdir(parents=True, exist_ok=True)
    LOG.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        "dockerd",
        "--data-root",
        str(DATA_ROOT),
        "--exec-root",
        str(EXEC_ROOT),
        "--host",
        DOCKER_HOST,
        "--pidfile",
        str(PIDFILE),
        "--storage-driver",
        driver,
    ]
    with LOG.open("ab") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if _ping():
            return True
        time.sleep(0.2)
    proc.kill()
    return False


def _storage_driver() -> str:
    return _docker("info", "--format", "{{.Driver}}").stdout.strip()


def debian_mirror() -> str:
    """The Debian mirror apt uses (deb822 `.sources` or one-line `sources.list`), for debootstrap."""
    files = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for f in files:
        if not f.is_file() or f.suffix not in ("", ".list", ".sources"):
            continue
        text = f.read_text(errors="replace")
        for m in re.finditer(r"^URIs:\s*(\S+)", text, re.M):
            if "security" not in m.group(1):
                return m.group(1)
        for m in re.finditer(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s", text, re.M):
            return m.group(1)
    return "http://deb.debian.org/debian"


def _build_rootfs_tar() -> None:
    """debootstrap a minimal bookworm and tar it into the cache (atomically: a crash leaves no half tar)."""
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mimo-rootfs-", dir="/var/tmp") as tmp:
        root = Path(tmp) / "rootfs"
        _run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(BASE_PACKAGES)}",
                "bookworm",
                str(root),
                debian_mirror(),
            ],
            "debootstrap",
        )
        for sub in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for p in (root / sub).glob("*"):
                if p.is_file():
                    p.unlink()
        partial = ROOTFS_TAR.with_suffix(".tar.partial")
        _run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(partial), "."], "tar rootfs")
        partial.replace(ROOTFS_TAR)


def _has_base_image() -> bool:
    """The base image exists and was made from the current package list."""
    proc = _docker("image", "inspect", "--format", '{{index .Config.Labels "mimo.base-key"}}', BASE_IMAGE, check=False)
    return proc.returncode == 0 and proc.stdout.strip() == BASE_KEY


def ensure_dockerd() -> DockerdInfo:
    """Make sure our engine runs and has the base image; cheap when both are already there."""
    t0 = time.monotonic()
    steps: dict[str, float] = {}
    with _locked():
        reused = _ping()
        if not reused:
            if shutil.which("dockerd") is None or shutil.which("debootstrap") is None or shutil.which("curl") is None:
                s = time.monotonic()
                _install_packages()
                steps["install"] = time.monotonic() - s
            s = time.monotonic()
            if not _start_dockerd("overlay2") and not _start_dockerd("vfs"):
                raise RuntimeError(f"dockerd did not start with overlay2 nor vfs; see {LOG}")
            steps["dockerd"] = time.monotonic() - s
        if not _has_base_image():
            if not ROOTFS_TAR.exists():
                if shutil.which("debootstrap") is None:
                    s = time.monotonic()
                    _install_packages()
                    steps["install"] = steps.get("install", 0) + time.monotonic() - s
                s = time.monotonic()
                _build_rootfs_tar()
                steps["debootstrap"] = time.monotonic() - s
            s = time.monotonic()
            _docker(
                "import",
                "--change",
                'CMD ["/bin/bash"]',
                "--change",
                f"LABEL mimo.base-key={BASE_KEY}",
                "-",
                BASE_IMAGE,
                input_file=ROOTFS_TAR,
            )
            steps["import"] = time.monotonic() - s
        driver = _storage_driver()
    return DockerdInfo(
        docker_host=DOCKER_HOST,
        base_image=BASE_IMAGE,
        storage_driver=driver,
        reused=reused,
        setup_seconds=time.monotonic() - t0,
        steps=steps,
    )


@contextmanager
def use_dockerd() -> Iterator[DockerdInfo]:
    """Hold the engine for the block (started if needed); the last user to leave stops it."""
    USERS_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with USERS_LOCK.open("a") as users:
        fcntl.flock(users, fcntl.LOCK_SH)
        try:
            info = ensure_dockerd()
            if not info.reused:
                MANAGED.touch()
            yield info
        finally:
            fcntl.flock(users, fcntl.LOCK_UN)
            stop_if_unused()


def stop_if_unused() -> bool:
    """Stop the engine when a user started it and no user holds it now. True when it was stopped."""
    USERS_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with USERS_LOCK.open("a") as users, _locked():
        try:
            fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # another test process or bench still uses it
        try:
            if not MANAGED.exists():
                return False  # started by hand (or by an older checkout): not ours to stop
            _stop_our_dockerd()
            MANAGED.unlink(missing_ok=True)
        finally:
            fcntl.flock(users, fcntl.LOCK_UN)
    return True


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--stop"]:
        print("stopped" if stop_if_unused() else "in use, or started by hand: not stopped")
    else:
        info = ensure_dockerd()
        MANAGED.unlink(missing_ok=True)  # started or adopted by hand: left running
        print(info.model_dump_json(indent=2))
        print(f"export DOCKER_HOST={info.docker_host}")
