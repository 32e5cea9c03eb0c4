"""Getting a task's image onto the engine: use it if present, else pull it, else build its Dockerfile.

Built images are tagged by a content hash of the build context, so the same task (or any task with
an identical `environment/` folder) never rebuilds, across rollouts, workers and runs. A lock per
hash (threads) plus a file lock (processes) makes concurrent rollouts of one task build it once.
`environment.image_prefix` (a registry mirror) is applied to the Dockerfile's `FROM` images too, so a
site that can only reach its mirror can still build.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import logging
import os
import re
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Any

from mimo_core.errors import SandboxError

BUILD_REPO = "mimo-build"
log = logging.getLogger("mimoagent.docker")
_locks: dict[str, threading.Lock] = {}
_warned: set[str] = set()
_failed: dict[str, str] = {}  # tag -> error: a context that failed to build is not retried by this process
_locks_guard = threading.Lock()


def context_hash(context: Path) -> str:
    """sha256 over every file's relative path, mode and bytes (and symlink targets), in sorted order."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(context):
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            rel = path.relative_to(context).as_posix()
            h.update(b"\0F" + rel.encode())
            if path.is_symlink():
                h.update(b"\0L" + os.readlink(path).encode())
                continue
            h.update(b"\0M%o" % (path.stat().st_mode & 0o777))
            with path.open("rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
    return h.hexdigest()


def build_tag(context: Path, image_prefix: str = "") -> str:
    """`mimo-build/<folder name>:<hash>`: readable in `docker images`, unique per content (and per mirror:
    the same Dockerfile built from a mirror's base image is another image)."""
    label = context.resolve().name
    if label in ("environment", "tests", "docker", ".") and context.resolve().parent.name:
        label = f"{context.resolve().parent.name}-{label}"
    label = re.sub(r"[^a-z0-9._-]+", "-", label.lower()).strip("._-")[:60] or "task"
    digest = context_hash(context)
    if image_prefix:
        digest = hashlib.sha256(f"{digest}\0{image_prefix}".encode()).hexdigest()
    return f"{BUILD_REPO}/{label}:{digest[:20]}"


_FROM = re.compile(r"^(\s*FROM\s+)((?:--\S+\s+)*)(\S+)(.*)$", re.I)
_STAGE = re.compile(r"\s+AS\s+(\S+)", re.I)


def prefix_from_lines(dockerfile: str, image_prefix: str) -> str:
    """Prepend the mirror prefix to every base image in `FROM` lines. Left alone: `scratch`, earlier
    build stages (`FROM builder`), images named through a build argument (`FROM $BASE`) and images that
    already carry the prefix."""
    if not image_prefix:
        return dockerfile
    stages: set[str] = set()
    out = []
    for line in dockerfile.splitlines(keepends=True):
        m = _FROM.match(line)
        if m:
            head, flags, image, rest = m.groups()
            if not (
                image.lower() == "scratch" or image.lower() in stages or "$" in image or image.startswith(image_prefix)
            ):
                line = f"{head}{flags}{image_prefix}{image}{rest}" + line[len(line.rstrip("\r\n")) :]
            stage = _STAGE.search(rest)
            if stage:
                stages.add(stage.group(1).lower())
        out.append(line)
    return "".join(out)


def _context_tar(context: Path, dockerfile: str) -> io.BytesIO:
    """The build context as a tar stream, with the rewritten Dockerfile in place of the task's own."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in sorted(context.rglob("*")):
            rel = path.relative_to(context).as_posix()
            if rel == "Dockerfile":
                continue
            tar.add(str(path), arcname=rel, recursive=False)
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


def _has_image(client: Any, name: str) -> bool:
    import docker.errors

    try:
        client.images.get(name)
    except docker.errors.ImageNotFound:
        return False
    return True


def _thread_lock(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def build_image(client: Any, context: Path, timeout: float, image_prefix: str = "") -> str:
    """Build `context/Dockerfile` unless an image with the same content hash exists; return its tag."""
    if not (context / "Dockerfile").is_file():
        raise SandboxError(f"no Dockerfile in build context {context}")
    tag = build_tag(context, image_prefix)
    if _has_image(client, tag):
        return tag
    if tag in _failed:
        raise SandboxError(_failed[tag])
    lock_path = Path(tempfile.gettempdir()) / f"mimo-build-{tag.rsplit(':', 1)[1]}.lock"
    with _thread_lock(tag), lock_path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            if _has_image(client, tag):  # another worker or process built it while we waited
                return tag
            try:
                _build(client, context, tag, timeout, image_prefix)
            except SandboxError as e:
                _failed[tag] = str(e)
                raise
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
    return tag


def _build(client: Any, context: Path, tag: str, timeout: float, image_prefix: str = "") -> None:
    log: list[str] = []
    error: str | None = None
    dockerfile = (context / "Dockerfile").read_text(encoding="utf-8")
    prefixed = prefix_from_lines(dockerfile, image_prefix)
    where: dict[str, Any] = (
        {"path": str(context)}
        if prefixed == dockerfile
        else {"fileobj": _context_tar(context, prefixed), "custom_context": True}
    )
    try:
        for chunk in client.api.build(
            **where, tag=tag, rm=True, forcerm=True, decode=True, timeout=timeout, labels={"mimoagent.build": "1"}
        ):
            if "stream" in chunk:
                log.append(chunk["stream"])
            if "error" in chunk:
                error = chunk["error"]
    except Exception as e:  # connection errors, read timeouts: report with the log so far
        error = f"{type(e).__name__}: {e}"
    if error is not None:
        tail = "".join(log)[-3000:]
        raise SandboxError(f"building {context}/Dockerfile failed: {error.strip()}\n{tail}")


def registry_of(image: str) -> str:
    """The registry an image reference pulls from (Docker's rule: a first part with a dot, a port or
    `localhost` is a registry host; anything else is Docker Hub)."""
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return f"the registry {first}"
    return "Docker Hub (docker.io)"


def ensure_image(
    client: Any,
    image: str | None,
    dockerfile_dir: str | None,
    timeout: float,
    fallback: str | None = None,
    image_prefix: str = "",
) -> str:
    """The image to run: `image` if present or pullable, else one built from `dockerfile_dir`, else
    `fallback` (when configured: e.g. a base image into which the dataset type seeds the repository)."""
    import docker.errors

    problems: list[str] = []
    if image:
        if _has_image(client, image):
            return image
        try:
            client.images.pull(image)
            return image
        except (docker.errors.DockerException, OSError) as e:  # (OSError: the registry's connection)
            why = " ".join(str(getattr(e, "explanation", None) or e).split())[:300]
            problems.append(
                f"image {image!r} is not on the engine and could not be pulled from {registry_of(image)} ({why})"
            )
    if dockerfile_dir:
        try:
            return build_image(client, Path(dockerfile_dir), timeout, image_prefix)
        except SandboxError as e:
            first, _, log_tail = str(e).partition("\n")
            if not fallback:
                if not problems:
                    raise
                error = first.partition(" failed: ")[2] or first
                raise SandboxError(
                    f"{problems[0]}; its Dockerfile ({dockerfile_dir}) was built instead, and the "
                    f"build failed: {error}\n{log_tail}"
                ) from None
            problems.append(first)
    if not problems:
        problems.append("the task names no image and no Dockerfile folder (image / dockerfile_dir)")
    if fallback:
        key = f"{image}|{dockerfile_dir}"
        if key not in _warned:  # once per task image, not once per rollout
            _warned.add(key)
            log.warning("using fallback image %s: %s", fallback, "; ".join(problems))
        return ensure_image(client, fallback, None, timeout)
    raise SandboxError("; ".join(problems))
