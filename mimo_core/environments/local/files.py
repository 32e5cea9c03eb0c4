"""The local backend's file methods: they see exactly what a command of the rollout sees.

With `sandbox: bwrap` every read and write happens inside the sandbox, by its own shell: a path the
sandbox does not show does not exist there, a read-only one cannot be written, and a link the agent
planted resolves inside the sandbox, never on the host. Bytes cross the boundary through files: what
the host hands in is written to the control folder (read-only inside, so the sandbox cannot swap it),
what comes out is written by the sandbox to its scratch folder and read by the host as a regular file,
never through a link (safe_files.py). Without a sandbox the methods run here, limited to the rollout's
own folder (after resolving links): nothing else of the host is theirs to read or write.
"""

from __future__ import annotations

import errno
import os
import secrets
import shlex
import shutil
import stat
import tarfile
from pathlib import Path
from typing import Any

from mimo_core.base.host_cancel import check_stop
from mimo_core.base.host_cancel import copy_tree as stoppable_copy_tree
from mimo_core.environments.base import FileHead, SandboxRefusal
from mimo_core.environments.local.allowlist import PRIVATE_TOPS, SYSTEM_TOPS
from mimo_core.environments.local.safe_files import copy_file, copy_tree, read_regular

_MISSING, _IS_DIR, _FAILED, _SPECIAL = 44, 45, 46, 47
_TIMEOUT = 600.0


class LocalFiles:
    """File methods of `LocalEnvironment` (which provides the attributes used here)."""

    base: str | None
    task_cwd: str
    spec: Any
    scratch_dir: str
    _bwrap: Any
    _ctl: str

    def execute(
        self, command: str, timeout: float | None = None, cwd: str | None = None, env: dict[str, str] | None = None
    ) -> Any:
        raise NotImplementedError

    def _host_path(self, path: str) -> str:
        raise NotImplementedError

    def _inside(self, host_path: str) -> str:
        raise NotImplementedError

    # -- what a path is ------------------------------------------------------------------------------

    def _sandbox_target(self, path: str) -> str:
        """`path` as the sandbox sees it; a path it does not show is refused with a clear message."""
        target = self._inside(self._host_path(path))
        shown = {"/" + t for t in (*SYSTEM_TOPS, *PRIVATE_TOPS, "dev", "proc")}
        own = [self.spec.cwd, self.scratch_dir, getattr(self, "home", ""), self.task_cwd]
        top = "/" + os.path.normpath(target).split("/")[1]
        if top in shown or any(target == d or target.startswith(d.rstrip("/") + "/") for d in own if d):
            return target
        raise SandboxRefusal(path, "is outside the sandbox (it does not exist there)")

    def _confined(self, path: str) -> str:
        """Without a sandbox: the host path, which must resolve inside the rollout's own folder."""
        host = os.path.realpath(self._host_path(path))
        base = os.path.realpath(self.base or "/nonexistent")
        if host != base and not host.startswith(base + os.sep):
            raise SandboxRefusal(path, "is outside the rollout's folder")
        return host

    def _run(self, script: str, what: str, path: str) -> Any:
        res = self.execute(script, timeout=_TIMEOUT, cwd=self.spec.cwd)
        if res.returncode == _MISSING:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
        if res.returncode == _IS_DIR:
            raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
        if res.returncode != 0:
            message = res.output.strip().splitlines()[-1:] or [f"exit {res.returncode}"]
            code = (
                errno.EROFS
                if "Read-only file system" in res.output
                else (errno.EACCES if "ermission denied" in res.output else errno.EIO)
            )
            raise OSError(code, f"{what} failed in the sandbox: {message[0][-300:]}", path)
        return res

    def _xfer(self, folder: str) -> str:
        return os.path.join(folder, f".xfer-{secrets.token_hex(8)}")

    # -- the Environment's file methods --------------------------------------------------------------

    def read_file(self, path: str) -> bytes:
        if self._bwrap is None:
            with open(self._confined(path), "rb") as f:
                return f.read()
        target, out = self._sandbox_target(path), self._xfer(self.scratch_dir)
        q = shlex.quote(target)
        self._run(
            f"[ -e {q} ] || exit {_MISSING}; [ -d {q} ] && exit {_IS_DIR}; "
            f"command -p cat -- {q} > {shlex.quote(out)} || exit {_FAILED}",
            "reading",
            path,
        )
        try:
            return read_regular(out)
        finally:
            _unlink(out)

    def read_head(self, path: str, max_bytes: int) -> FileHead:
        """At most `max_bytes` of the file, never more in memory: `head -c` in the sandbox (a 10 GB sparse
        file or /dev/zero costs `max_bytes`); a FIFO or socket is refused rather than waited on."""
        if self._bwrap is None:
            return _head_on_host(self._confined(path), max_bytes)
        target, out = self._sandbox_target(path), self._xfer(self.scratch_dir)
        q = shlex.quote(target)
        res = self._run(
            f"[ -e {q} ] || exit {_MISSING}; [ -d {q} ] && exit {_IS_DIR}; "
            f"if [ -f {q} ]; then command -p stat -L -c %s -- {q} || exit {_FAILED}; elif [ -c {q} ]; then "
            f"echo -; else echo 'not a regular file' >&2; exit {_SPECIAL}; fi; "
            f"command -p head -c {max_bytes + 1} -- {q} > {shlex.quote(out)} || exit {_FAILED}",
            "reading",
            path,
        )
        try:
            data = read_regular(out, max_bytes + 1)
        finally:
            _unlink(out)
        word = (res.output.strip().splitlines() or ["-"])[-1].strip()
        size = int(word) if word.isdigit() else None
        return FileHead(data=data[:max_bytes], size=size, truncated=len(data) > max_bytes)

    def write_file(self, path: str, data: bytes, mode: int | None = None) -> None:
        """Write `data`, creating parent folders. `mode=None` keeps an existing file's mode (new: 0644)."""
        if self._bwrap is None:
            target = self._confined(path)
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            existed = os.path.exists(target)
            with open(target, "wb") as f:
                f.write(data)
            if mode is not None or not existed:
                os.chmod(target, 0o644 if mode is None else mode)
            return
        target, src = self._sandbox_target(path), self._xfer(self._ctl)
        with open(src, "xb") as f:  # the control folder is read-only inside: the sandbox cannot swap it
            f.write(data)
        q, parent = shlex.quote(target), shlex.quote(os.path.dirname(target) or ".")
        chmod = f"; chmod {mode:o} {q}" if mode is not None else f"; [ $__e = 1 ] || chmod 644 {q}"
        try:
            self._run(
                f"[ -d {q} ] && exit {_IS_DIR}; __e=0; [ -e {q} ] && __e=1; mkdir -p -- {parent} && "
                f"command -p cat -- {shlex.quote(src)} > {q} || exit {_FAILED}{chmod}",
                "writing",
                path,
            )
        finally:
            _unlink(src)

    def copy_in(self, src: Path, dest: str) -> None:
        """Folders: their contents into `dest`. Files: to `dest`, or into it when `dest` is a folder."""
        src = Path(src)
        if self._bwrap is None:
            _copy_on_host(src, Path(self._confined(dest)))
            return
        target = self._sandbox_target(dest)
        archive = self._xfer(self._ctl) + ".tar"
        with tarfile.open(archive, "x") as tar:  # unpacked by the sandbox: links resolve inside it
            if src.is_dir():
                for child in sorted(src.iterdir()):
                    tar.add(str(child), arcname=child.name, filter=_until_stopped)
            elif src.is_file():
                tar.add(str(src), arcname=src.name)
            else:
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(src))
        q, qa = shlex.quote(target), shlex.quote(archive)
        if src.is_dir():
            script = f"mkdir -p -- {q} && command -p tar -xf {qa} -C {q} --no-same-owner"
        else:  # into a folder under its own name, else as `dest`
            qn = shlex.quote(src.name)
            script = (
                f"if [ -d {q} ]; then command -p tar -xf {qa} -C {q} --no-same-owner; else "
                f"mkdir -p -- {shlex.quote(os.path.dirname(target) or '.')} && "
                f"command -p tar -xOf {qa} {qn} > {q} && chmod {src.stat().st_mode & 0o777:o} {q}; fi"
            )
        try:
            self._run(script, "copying in", dest)
        finally:
            _unlink(archive)

    def copy_out(self, src: str, dest: Path) -> None:
        """Folders: their contents into `dest`. Files: to `dest`, or into it when `dest` is a folder.
        Links and special files are left out (a link the agent planted is never followed on the host)."""
        host = self._host_path(src) if self._bwrap is not None else self._confined(src)
        if self._bwrap is not None:
            self._sandbox_target(src)
            base = os.path.realpath(self.base or "/nonexistent")
            if not os.path.realpath(host).startswith(base + os.sep):
                raise SandboxRefusal(src, "is not one of the rollout's own folders")
        dest = Path(dest)
        if os.path.isdir(host) and not os.path.islink(host):
            copy_tree(host, dest)
            return
        if dest.is_dir():
            dest = dest / os.path.basename(host)
        dest.parent.mkdir(parents=True, exist_ok=True)
        copy_file(host, dest)


def _head_on_host(host: str, max_bytes: int) -> FileHead:
    """At most `max_bytes` of a host file (plus one byte to know whether more follow); never blocks on a
    FIFO (opened non-blocking: no data now is the end)."""
    fd = os.open(host, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", host)
        chunks, got = [], 0
        while got <= max_bytes:
            try:
                chunk = os.read(fd, min(1 << 20, max_bytes + 1 - got))
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    size = st.st_size if stat.S_ISREG(st.st_mode) else None
    return FileHead(data=data[:max_bytes], size=size, truncated=len(data) > max_bytes)


def _copy_on_host(src: Path, dest: Path) -> None:
    if src.is_dir():
        stoppable_copy_tree(src, dest)  # (stops when the run does)
        return
    if not src.is_file():
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(src))
    if dest.is_dir():
        dest = dest / src.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dest)


def _until_stopped(member: tarfile.TarInfo) -> tarfile.TarInfo:
    check_stop("the repository copy")
    return member


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
