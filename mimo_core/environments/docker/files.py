"""A container's files for the docker backend: single files and folders travel as tar archives (the
engine's put_archive / get_archive), stat is a HEAD on the archive endpoint, so reading or writing a file
costs no exec."""

from __future__ import annotations

import base64
import io
import json
import os
import tarfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mimo_core.environments.docker.streams import link_target, spool
from mimo_core.errors import SandboxError

if TYPE_CHECKING:
    from mimo_core.environments.base import FileHead, SandboxSpec

_GO_MODE_DIR = 1 << 31  # the engine reports Go's os.FileMode


class ContainerFiles:
    """File methods of `DockerEnvironment`, over its container (`_require()`) and client."""

    spec: SandboxSpec
    client: Any

    def _require(self) -> Any:
        raise NotImplementedError

    def _abs(self, path: str) -> str:
        return path if path.startswith("/") else f"{self.spec.cwd.rstrip('/')}/{path}"

    def _mkdir(self, path: str) -> None:
        res = self._require().exec_run(["mkdir", "-p", path])
        if res.exit_code != 0:
            raise SandboxError(f"mkdir -p {path} failed in the container: {res.output.decode(errors='replace')}")

    def read_file(self, path: str) -> bytes:
        import docker.errors

        path = self._abs(path)
        try:
            stream, stat = self._require().get_archive(path)
        except docker.errors.NotFound:
            raise FileNotFoundError(path) from None
        data = b"".join(stream)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            member = tar.next()
            if member is None or member.isdir():
                raise IsADirectoryError(path)
            if member.issym() or member.islnk():
                return self.read_file(link_target(path, member.linkname))
            f = tar.extractfile(member)
            return f.read() if f else b""

    def read_head(self, path: str, max_bytes: int, _links: int = 0) -> FileHead:
        """At most `max_bytes` of the file: the archive is read as a stream up to the file's first
        `max_bytes + 1` bytes and the connection closed, so a 10 GB file costs `max_bytes`."""
        import docker.errors

        from mimo_core.environments.base import FileHead

        path = self._abs(path)
        api = self.client.api
        try:
            res = api._get(
                api._url("/containers/{0}/archive", self._require().id),
                params={"path": path},
                stream=True,
                headers={"Accept-Encoding": "identity"},
            )
            api._raise_for_status(res)
        except docker.errors.NotFound:
            raise FileNotFoundError(path) from None
        try:
            with tarfile.open(fileobj=res.raw, mode="r|") as tar:
                member = tar.next()
                if member is None or member.isdir():
                    raise IsADirectoryError(path)
                if member.issym() or member.islnk():
                    link = member.linkname
                else:
                    f = tar.extractfile(member)
                    data = f.read(max_bytes + 1) if f else b""
                    size = member.size if member.isreg() else None
                    return FileHead(data=data[:max_bytes], size=size, truncated=len(data) > max_bytes)
        finally:
            res.close()
        if _links >= 40:
            raise OSError(40, "Too many levels of symbolic links", path)
        return self.read_head(link_target(path, link), max_bytes, _links + 1)

    def write_file(self, path: str, data: bytes, mode: int | None = None) -> None:
        """Write `data`, creating parent folders. `mode=None` keeps an existing file's mode (new: 0644)."""
        path = self._abs(path)
        parent, name = os.path.dirname(path) or "/", os.path.basename(path)
        if mode is None:
            stat = self._stat(path)
            mode = stat["mode"] & 0o777 if stat else 0o644
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, int(time.time())
            tar.addfile(info, io.BytesIO(data))
        self._put(parent, buf.getvalue())

    def _stat(self, path: str) -> dict[str, Any] | None:
        """The engine's stat of a path (HEAD on the archive endpoint): no exec, no transfer."""
        api = self.client.api
        res = api.head(
            api._url("/containers/{0}/archive", self._require().id), params={"path": path}, timeout=api.timeout
        )  # APIClient is a requests.Session
        if res.status_code == 404:
            return None
        api._raise_for_status(res)
        return json.loads(base64.b64decode(res.headers["X-Docker-Container-Path-Stat"]))

    def _put(self, parent: str, archive: bytes) -> None:
        import docker.errors

        container = self._require()
        try:
            ok = container.put_archive(parent, archive)
        except docker.errors.NotFound:
            self._mkdir(parent)
            ok = container.put_archive(parent, archive)
        if not ok:
            raise SandboxError(f"copying into {parent} failed")

    def copy_in(self, src: Path, dest: str) -> None:
        """Folders: their contents into `dest`. Files: to `dest`, or into it when `dest` is a folder."""
        src, dest = Path(src), self._abs(dest)
        buf = io.BytesIO()
        if src.is_dir():
            with tarfile.open(fileobj=buf, mode="w") as tar:
                for child in sorted(src.iterdir()):
                    tar.add(str(child), arcname=child.name)
            self._mkdir(dest)
            self._put(dest, buf.getvalue())
            return
        if not src.is_file():
            raise FileNotFoundError(str(src))
        stat = self._stat(dest)
        is_dir = stat is not None and stat["mode"] & _GO_MODE_DIR != 0
        parent, name = (dest, src.name) if is_dir else (os.path.dirname(dest) or "/", os.path.basename(dest))
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(str(src), arcname=name)
        self._put(parent, buf.getvalue())

    def copy_out(self, src: str, dest: Path) -> None:
        """Folders: their contents into `dest`. Files: to `dest`, or into it when `dest` is a folder."""
        import docker.errors

        src, dest = self._abs(src), Path(dest)
        try:
            stream, stat = self._require().get_archive(src)
        except docker.errors.NotFound:
            raise FileNotFoundError(src) from None
        is_dir = stat.get("mode", 0) & _GO_MODE_DIR != 0
        with spool(stream) as fh, tarfile.open(fileobj=fh) as tar:
            top = os.path.basename(src.rstrip("/")) or "."
            if is_dir:
                dest.mkdir(parents=True, exist_ok=True)
                members = []
                for m in tar.getmembers():
                    rel = m.name.split("/", 1)[1] if "/" in m.name else ""
                    if rel and (m.isreg() or m.isdir()):  # a link the agent planted is never extracted
                        m.name = rel
                        members.append(m)
                tar.extractall(dest, members=members, filter="tar")
                return
            member = tar.getmember(top)
            target = dest / src.rsplit("/", 1)[-1] if dest.is_dir() else dest
            target.parent.mkdir(parents=True, exist_ok=True)
            f = tar.extractfile(member)
            target.write_bytes(f.read() if f else b"")
            os.chmod(target, member.mode & 0o777)
