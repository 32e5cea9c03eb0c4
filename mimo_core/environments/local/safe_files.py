"""Host-side file access to folders an agent could write: never through a link it planted.

The runner reads each call's output file, the sandbox's transfer files and the verifier's folder from
the host. An agent (or code it left behind) may have replaced any of them by a symbolic link to a host
file, or by a FIFO that blocks a reader. So the host opens only regular files, with O_NOFOLLOW on the
last component (the folders above are the runner's own, which the sandbox cannot rename), and copies
folders out keeping regular files and folders only: a link, a FIFO, a socket or a device is left out and
named in the result.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path

_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class NotRegular(OSError):
    """The path is a link, a FIFO, a socket or a device, not a regular file."""


def open_regular(path: str | Path) -> int:
    """A read-only descriptor of `path`, which must be a regular file and not a link."""
    try:
        fd = os.open(path, _OPEN)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotRegular(errno.ELOOP, "is a symbolic link", str(path)) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        raise NotRegular(errno.EINVAL, "is not a regular file", str(path))
    return fd


def read_regular(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most `limit`), never following a link."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as f:
        return f.read() if limit is None else f.read(limit)


def copy_tree(src: str | Path, dest: str | Path) -> list[str]:
    """Copy folders and regular files of `src` into `dest`; return what was left out (relative paths)."""
    src, dest = Path(src), Path(dest)
    skipped: list[str] = []
    dest.mkdir(parents=True, exist_ok=True)
    stack = [Path(".")]
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(src / rel))
        except OSError:
            skipped.append(str(rel))
            continue
        for entry in entries:
            item = rel / entry.name
            if entry.is_dir(follow_symlinks=False):
                (dest / item).mkdir(exist_ok=True)
                stack.append(item)
            elif entry.is_file(follow_symlinks=False):
                copy_file(src / item, dest / item)
            else:
                skipped.append(str(item))
    return sorted(skipped)


def copy_file(src: str | Path, dest: str | Path) -> None:
    """A regular file's bytes and permission bits, `src` opened without following a link."""
    fd = open_regular(src)
    with os.fdopen(fd, "rb") as fin, open(dest, "wb") as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
        os.chmod(fout.fileno(), os.fstat(fin.fileno()).st_mode & 0o777)
