"""Files in and out of an E2B sandbox as tar over its commands (the template needs `tar`), as the
kubernetes backend does over exec: the bytes sent in are uploaded through envd's file API and read by
`head -c <size>` from the command's stdin; what comes out is base64 in the command's output (exec_bytes).
Single files are read with `cat`."""

from __future__ import annotations

import io
import os
import shlex
import tarfile
import time
from pathlib import Path
from typing import Any

from mimo_core.environments.base import FileHead
from mimo_core.errors import SandboxError

_MISSING, _IS_DIR = 44, 45
_TIMEOUT = 600.0


def _abs(env: Any, path: str) -> str:
    return path if path.startswith("/") else f"{env.spec.cwd.rstrip('/')}/{path}"


def _check(env: Any, rc: int, err: str, what: str, path: str) -> None:
    if rc == _MISSING:
        raise FileNotFoundError(path)
    if rc == _IS_DIR:
        raise IsADirectoryError(path)
    if rc != 0:
        raise SandboxError(f"{what} {path} failed in {env._where()}: {err.strip()[:300]}")


def read_file(env: Any, path: str) -> bytes:
    q = shlex.quote(_abs(env, path))
    rc, out, err = env.exec_bytes(
        f"[ -e {q} ] || exit {_MISSING}; [ -d {q} ] && exit {_IS_DIR}; cat {q}", timeout=_TIMEOUT
    )
    _check(env, rc, err, "reading", _abs(env, path))
    return out


def read_head(env: Any, path: str, max_bytes: int) -> FileHead:
    """At most `max_bytes` of the file, by `head -c` in the pod; its size (stat) on the first line."""
    q = shlex.quote(_abs(env, path))
    script = (
        f"[ -e {q} ] || exit {_MISSING}; [ -d {q} ] && exit {_IS_DIR}; "
        f"if [ -f {q} ]; then stat -L -c %s {q} || exit 1; elif [ -c {q} ]; then echo -; else "
        f"echo 'not a regular file' >&2; exit 1; fi; head -c {max_bytes + 1} {q}"
    )
    rc, out, err = env.exec_bytes(script, timeout=_TIMEOUT)
    _check(env, rc, err, "reading", _abs(env, path))
    first, _, data = out.partition(b"\n")
    size = int(first) if first.strip().isdigit() else None
    return FileHead(data=data[:max_bytes], size=size, truncated=len(data) > max_bytes)


def _tar(add: Any) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        add(tar)
    return buf.getvalue()


def write_file(env: Any, path: str, data: bytes, mode: int | None = None) -> None:
    """Create parent folders; `mode=None` keeps an existing file's mode (new files: 0644)."""
    path = _abs(env, path)
    parent, name = os.path.dirname(path) or "/", os.path.basename(path)

    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), mode or 0o644, int(time.time())
        tar.addfile(info, io.BytesIO(data))

    archive = _tar(add)
    qp, qparent = shlex.quote(path), shlex.quote(parent)
    chmod = f"chmod {mode:o} {qp}" if mode is not None else f'chmod "${{m:-644}}" {qp}'
    script = (
        f"mkdir -p {qparent} || exit 1; m=$(stat -c %a {qp} 2>/dev/null); "
        f"head -c {len(archive)} | tar -xf - -C {qparent} --no-same-owner || exit 1; {chmod}"
    )
    rc, _, err = env.exec_bytes(script, archive, timeout=_TIMEOUT)
    _check(env, rc, err, "writing", path)


def copy_in(env: Any, src: Path, dest: str) -> None:
    """Folders: their contents into `dest`. Files: to `dest`, or into it when `dest` is a folder."""
    dest = _abs(env, dest)
    qd = shlex.quote(dest)
    if src.is_dir():
        archive = _tar(lambda tar: [tar.add(str(c), arcname=c.name) for c in sorted(src.iterdir())])
        script = f"mkdir -p {qd} && head -c {len(archive)} | tar -xf - -C {qd} --no-same-owner"
    elif src.is_file():
        archive = _tar(lambda tar: tar.add(str(src), arcname=src.name))
        extract = f"head -c {len(archive)} | tar -xf - -C"
        parent = shlex.quote(os.path.dirname(dest) or "/")
        script = (
            f"if [ -d {qd} ]; then {extract} {qd} --no-same-owner; else mkdir -p {parent} && "
            f't=$(mktemp -d {parent}/.mimo-in.XXXXXX) && {extract} "$t" --no-same-owner && '
            f'mv -f "$t"/{shlex.quote(src.name)} {qd}; rc=$?; rm -rf "$t"; exit $rc; fi'
        )
    else:
        raise FileNotFoundError(str(src))
    rc, _, err = env.exec_bytes(script, archive, timeout=_TIMEOUT)
    _check(env, rc, err, "copying into", dest)


def copy_out(env: Any, src: str, dest: Path) -> None:
    """Folders: their contents into `dest`. Files: to `dest`, or into it when `dest` is a folder."""
    src = _abs(env, src)
    q = shlex.quote(src)
    parent, name = shlex.quote(os.path.dirname(src.rstrip("/")) or "/"), shlex.quote(os.path.basename(src))
    script = (
        f"if [ -d {q} ]; then printf D >&2; tar -cf - -C {q} .; elif [ -e {q} ]; then printf F >&2; "
        f"tar -chf - -C {parent} {name}; else exit {_MISSING}; fi"
    )
    rc, raw, err = env.exec_bytes(script, timeout=_TIMEOUT)
    _check(env, rc, err[1:], "copying out", src)
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        if err.startswith("D"):
            dest.mkdir(parents=True, exist_ok=True)
            members = []
            for m in tar.getmembers():
                rel = os.path.normpath(m.name)
                if rel not in (".", "") and (m.isreg() or m.isdir()):  # never a link the agent planted
                    m.name = rel
                    members.append(m)
            tar.extractall(dest, members=members, filter="tar")
            return
        member = tar.next()
        if member is None:
            raise SandboxError(f"copying {src} out of {env._where()}: empty archive")
        target = dest / os.path.basename(src) if dest.is_dir() else dest
        target.parent.mkdir(parents=True, exist_ok=True)
        f = tar.extractfile(member) if member.isreg() else None
        target.write_bytes(f.read() if f else b"")
        os.chmod(target, member.mode & 0o777)
