"""`read_head` on every backend (local, local+bwrap, docker, the Kubernetes stand-in): at most
`max_bytes` of a file, its size, and whether more followed; a file far larger than the limit (sparse,
10 GB) costs only the limit, and a device that never ends is read to the limit."""

from __future__ import annotations

from typing import Any

import pytest

from mimo_core.environments.base import read_head
from tests.environments.conftest import ALL_BACKENDS, Backend, backend

__all__ = ["backend"]


@pytest.mark.parametrize("backend", ALL_BACKENDS, indirect=True)
def test_read_head_is_bounded_and_says_what_it_cut(backend: Backend) -> None:
    env: Any = backend.make()
    env.write_file("f.bin", b"\xff\x00abc")
    head = read_head(env, "f.bin", 5)
    assert (head.data, head.size, head.truncated) == (b"\xff\x00abc", 5, False)
    head = read_head(env, "f.bin", 4)
    assert (head.data, head.size, head.truncated) == (b"\xff\x00ab", 5, True)
    env.execute("printf 'start\\n' > sparse.txt && truncate -s 10G sparse.txt && ln -s sparse.txt link.txt")
    for path in ("sparse.txt", "link.txt"):
        head = read_head(env, path, 4096)
        assert head.data.startswith(b"start\n") and len(head.data) == 4096
        assert head.size == 10 << 30 and head.truncated
    with pytest.raises(FileNotFoundError):
        read_head(env, "missing", 4)
    with pytest.raises(IsADirectoryError):
        read_head(env, ".", 4)


@pytest.mark.parametrize("backend", ALL_BACKENDS, indirect=True)
def test_the_backend_reads_the_head_itself(backend: Backend) -> None:
    """Without its own `read_head` a backend is read whole, then cut: a 10 GB file would be 10 GB."""
    env: Any = backend.make()
    assert hasattr(env, "read_head")
