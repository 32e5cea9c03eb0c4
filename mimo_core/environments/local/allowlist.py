"""What a bubblewrap sandbox sees of the host: an allow-list, never "the host minus a few folders".

Bound read-only: the system's programs and libraries (`/usr` and the `/bin`, `/sbin`, `/lib*` entries,
as the links or folders they are) and `/etc`, with every entry of `/etc` that its permission bits keep
from other users (`/etc/shadow`, `/etc/ssl/private`, ...) masked by an empty file or folder: the sandbox
may run as root without capabilities, and root owns those files. Given by bwrap itself: a fresh `/proc`,
a minimal `/dev`, private tmpfs `/tmp`, `/var` (with `/var/tmp`) and `/run`. Nothing else of the host:
not `/home` or `/root`, not `/run` or `/var/run` (so no host unix socket), not the output root, the
dataset or the checkout. The rollout's own folders are bound on top by the caller.
"""

from __future__ import annotations

import functools
import os
import stat

SYSTEM_TOPS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")
PRIVATE_TOPS = ("tmp", "var", "run")  # empty tmpfs of the sandbox's own (`/var/tmp` made inside `/var`)


@functools.cache
def masked_etc() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(files, folders) under /etc that other users may not read: hidden inside the sandbox. Scanned
    once per process; a folder hidden whole is not descended."""
    files: list[str] = []
    folders: list[str] = []
    for top, dirs, names in os.walk("/etc", onerror=lambda _e: None):
        keep = []
        for d in dirs:
            path = os.path.join(top, d)
            if _private(path):
                folders.append(path)
            elif not os.path.islink(path):
                keep.append(d)
        dirs[:] = keep
        files += [p for p in (os.path.join(top, n) for n in names) if _private(p)]
    return tuple(sorted(files)), tuple(sorted(folders))


def _private(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if stat.S_ISLNK(st.st_mode):
        return False
    return not st.st_mode & stat.S_IROTH


def system_args(empty_dir: str, empty_file: str) -> list[str]:
    """bwrap arguments for the host part of the sandbox. `empty_dir` and `empty_file` are an empty
    folder and file of the rollout's, bound over the private folders and files of /etc."""
    args: list[str] = []
    for name in SYSTEM_TOPS:
        path = "/" + name
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    files, folders = masked_etc()
    for f in files:
        args += ["--ro-bind", empty_file, f]
    for d in folders:
        args += ["--ro-bind", empty_dir, d]
    args += ["--dev", "/dev", "--proc", "/proc"]
    for name in PRIVATE_TOPS:
        args += ["--tmpfs", "/" + name]
    return args + ["--dir", "/var/tmp"]


def is_system_path(path: str) -> bool:
    """Inside a read-only system folder of the sandbox (where no work folder can be bound)."""
    path = os.path.normpath(path)
    return path in ("/", "/proc", "/dev") or any(
        path == "/" + top or path.startswith(f"/{top}/") for top in SYSTEM_TOPS
    )
