"""The file tools read at most `limits.max_read_bytes` of a file, whatever the agent made it: the runner's
memory does not grow with the file (measured with tracemalloc around the call), and the model is told
what it was shown. Real sandboxes (local, and local+bwrap where bubblewrap is installed)."""

from __future__ import annotations

import os
import re
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from mimo_core.environments.base import read_head
from mimo_core.limits import LimitsConfig, use_limits
from mimo_core.tools.base import ToolError
from mimo_core.tools.files import EditTool, ReadTool
from tests.host_needs import needs_bwrap
from tests.tools.conftest import MakeEnv

MiB = 1 << 20
SANDBOXES = ["none", pytest.param("bwrap", marks=needs_bwrap)]


def _peak(call: Callable[[], object]) -> tuple[object, int]:
    """What `call` returned and the most memory Python allocated while it ran."""
    tracemalloc.start()
    try:
        out = call()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _short_lines(path: Path, size: int) -> None:
    line = b"abcdefghi\n"
    with open(path, "wb") as f:
        for _ in range(size // (len(line) * 10000)):
            f.write(line * 10000)


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_60_mb_file_of_short_lines_shows_its_first_part(make_env: MakeEnv, sandbox: str) -> None:
    env = make_env(sandbox=sandbox)
    _short_lines(Path(env.spec.cwd, "big.txt"), 60 * MiB)
    size = os.path.getsize(Path(env.spec.cwd, "big.txt"))
    result, peak = _peak(lambda: ReadTool(observation_max_chars=2000).run({"path": "big.txt"}, env))
    out = result.output  # type: ignore[attr-defined]
    assert out.startswith("     1\tabcdefghi\n     2\tabcdefghi\n")
    assert f"[truncated: file is {size} bytes, showed {2 * MiB}]" in out
    assert "lines 1-209716" in out and "sed -n" in out
    assert peak < 40 * MiB, f"reading a 60 MB file allocated {peak / MiB:.0f} MB"


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_one_enormous_line_is_cut_not_loaded(make_env: MakeEnv, sandbox: str) -> None:
    env = make_env(sandbox=sandbox)
    with open(Path(env.spec.cwd, "line.txt"), "wb") as f:
        for _ in range(50):
            f.write(b"x" * MiB)
    result, peak = _peak(lambda: ReadTool(observation_max_chars=2000).run({"path": "line.txt"}, env))
    out = result.output  # type: ignore[attr-defined]
    assert out.startswith("     1\txxxx") and "characters elided" in out and len(out) < 3000
    assert f"[truncated: file is {50 * MiB} bytes, showed {2 * MiB}]" in out
    assert peak < 40 * MiB


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_sparse_10_gb_file_costs_the_limit(make_env: MakeEnv, sandbox: str) -> None:
    env = make_env(sandbox=sandbox)
    with open(Path(env.spec.cwd, "sparse.txt"), "wb") as f:
        f.write(b"start\n" * 2000)
        f.truncate(10 << 30)
    with use_limits(LimitsConfig(max_read_bytes=4096)):
        result, peak = _peak(lambda: ReadTool().run({"path": "sparse.txt", "end_line": 2}, env))
    out = result.output  # type: ignore[attr-defined]
    assert out.startswith("     1\tstart\n     2\tstart\n")
    assert f"[truncated: file is {10 << 30} bytes, showed 4096]" in out
    assert peak < 4 * MiB
    result, peak = _peak(lambda: ReadTool(observation_max_chars=2000).run({"path": "sparse.txt"}, env))
    assert f"[truncated: file is {10 << 30} bytes, showed {2 * MiB}]" in result.output  # type: ignore[attr-defined]
    assert peak < 40 * MiB


def _expect_binary(env: object, path: str) -> None:
    with pytest.raises(ToolError, match="binary file"):
        ReadTool().run({"path": path}, env)  # type: ignore[arg-type]


@needs_bwrap
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_that_never_ends_is_read_to_the_limit(make_env: MakeEnv, device: str) -> None:
    env = make_env(sandbox="bwrap")
    os.symlink(device, Path(env.spec.cwd, "dev.txt"))  # a link the agent planted resolves inside
    for path in (device, "dev.txt"):
        _, peak = _peak(lambda p=path: _expect_binary(env, p))
        assert peak < 40 * MiB
    head = read_head(env, device, 1000)
    assert len(head.data) == 1000 and head.truncated and head.size is None


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_fifo_never_blocks_the_read(make_env: MakeEnv, sandbox: str) -> None:
    env = make_env(sandbox=sandbox, timeout=5.0)
    os.mkfifo(Path(env.spec.cwd, "pipe"))
    try:
        out = ReadTool().run({"path": "pipe"}, env).output
        assert out == "(pipe is empty)"  # without a sandbox: opened non-blocking, no writer is the end
    except ToolError as e:
        assert "not a regular file" in str(e)  # in the sandbox: refused


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_edit_refuses_a_file_over_the_limit_and_a_result_over_it(make_env: MakeEnv, sandbox: str) -> None:
    env = make_env(sandbox=sandbox)
    Path(env.spec.cwd, "big.txt").write_bytes(b"a\n" * 5000)
    Path(env.spec.cwd, "small.txt").write_bytes(b"a\n" * 10)
    with use_limits(LimitsConfig(max_read_bytes=1000)):
        with pytest.raises(ToolError, match=re.escape("[truncated: file is 10000 bytes, showed 1000]")):
            EditTool().run({"path": "big.txt", "old_string": "a", "new_string": "b", "replace_all": True}, env)
        with pytest.raises(ToolError, match="would be over 1000 characters"):
            EditTool().run({"path": "small.txt", "old_string": "a", "new_string": "b" * 200, "replace_all": True}, env)
        EditTool().run({"path": "small.txt", "old_string": "a", "new_string": "bb", "replace_all": True}, env)
    assert Path(env.spec.cwd, "small.txt").read_bytes() == b"bb\n" * 10
    assert Path(env.spec.cwd, "big.txt").read_bytes() == b"a\n" * 5000


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_read_head_of_a_file_under_the_limit_is_whole(make_env: MakeEnv, sandbox: str) -> None:
    env = make_env(sandbox=sandbox)
    Path(env.spec.cwd, "f.bin").write_bytes(b"\xff\x00abc")
    head = read_head(env, "f.bin", 5)
    assert (head.data, head.size, head.truncated) == (b"\xff\x00abc", 5, False)
    head = read_head(env, "f.bin", 4)
    assert (head.data, head.size, head.truncated) == (b"\xff\x00ab", 5, True)
    with pytest.raises(FileNotFoundError):
        read_head(env, "missing", 4)
    with pytest.raises(IsADirectoryError):
        read_head(env, ".", 4)


class _ExecuteOnly:
    """A backend with only the seam's `execute` (a custom `module:Class`): read_head goes through it."""

    def __init__(self, env: object) -> None:
        self.env = env

    def execute(self, command: str, **kw: object) -> object:
        return self.env.execute(command, **kw)  # type: ignore[attr-defined]

    def read_file(self, path: str) -> bytes:
        raise AssertionError("read whole")


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_read_head_without_a_backends_own_goes_through_execute_in_pieces(make_env: MakeEnv, sandbox: str) -> None:
    env = make_env(sandbox=sandbox)
    data = os.urandom(7 * MiB + 123)
    Path(env.spec.cwd, "r.bin").write_bytes(data)
    plain = _ExecuteOnly(env)
    for limit in (10, 3 * MiB, 7 * MiB + 123, 8 * MiB):
        head = read_head(plain, "r.bin", limit)  # type: ignore[arg-type]
        assert head.data == data[:limit] and head.size == len(data) and head.truncated == (limit < len(data))
    with open(Path(env.spec.cwd, "sparse"), "wb") as f:
        f.truncate(10 << 30)
    head = read_head(plain, "sparse", 1000)  # type: ignore[arg-type]
    assert head.data == b"\0" * 1000 and head.size == 10 << 30 and head.truncated
    with pytest.raises(FileNotFoundError):
        read_head(plain, "missing", 4)  # type: ignore[arg-type]
    with pytest.raises(IsADirectoryError):
        read_head(plain, ".", 4)  # type: ignore[arg-type]
