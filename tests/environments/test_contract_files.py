"""The Environment contract, files: read and write (binary, modes, parent folders, the task's declared
paths), copies in and out (folders and single files), seeding. Run against every backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.environments.conftest import Backend


def test_file_methods_write_read_and_keep_modes(backend: Backend) -> None:
    env = backend.make()
    env.write_file("a/b.txt", b"hello\x00bytes\xff")
    assert env.read_file("a/b.txt") == b"hello\x00bytes\xff"
    assert env.read_file("/testbed/a/b.txt") == b"hello\x00bytes\xff"  # the task's declared cwd
    assert env.execute("cat a/b.txt | wc -c").output.strip() == "12"
    assert env.execute("stat -c %a a/b.txt").output == "644\n"  # a new file: 0644

    script = f"{env.scratch_dir}/bin/run.sh"  # outside the working folder, in a folder not there yet
    env.write_file(script, b"#!/bin/sh\necho ran\n", mode=0o755)
    assert env.execute(script).output == "ran\n"
    env.write_file(script, b"#!/bin/sh\necho again\n")  # mode=None keeps the file's mode
    assert env.execute(script).output == "again\n"
    assert env.execute(f"stat -c %a {script}").output == "755\n"
    assert env.read_file(script) == b"#!/bin/sh\necho again\n"

    with pytest.raises(FileNotFoundError):
        env.read_file("missing.txt")
    with pytest.raises(FileNotFoundError):
        env.read_file(f"{env.scratch_dir}/nope/missing")


def test_copies_in_and_out_take_folders_and_files(backend: Backend, tmp_path: Path) -> None:
    env = backend.make()
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "m.py").write_text("x = 1\n")
    (src / "top.txt").write_text("top\n")
    env.copy_in(src, "/testbed/copied")  # a folder: its contents into dest
    assert env.execute("cd copied && find . -type f | sort").output == "./pkg/m.py\n./top.txt\n"
    env.copy_in(src / "top.txt", "copied/pkg")  # a file into an existing folder
    renamed = f"{env.scratch_dir}/renamed.txt"
    env.copy_in(src / "top.txt", renamed)  # a file to a file path
    assert env.read_file("copied/pkg/top.txt") == b"top\n"
    assert env.read_file(renamed) == b"top\n"

    out = tmp_path / "out"
    env.copy_out("copied", out)
    assert (out / "pkg" / "m.py").read_text() == "x = 1\n" and (out / "top.txt").read_text() == "top\n"
    env.copy_out(renamed, tmp_path / "single.txt")
    assert (tmp_path / "single.txt").read_text() == "top\n"
    env.copy_out("copied/pkg/m.py", tmp_path / "new" / "dir" / "m.py")  # parent folders are made
    assert (tmp_path / "new" / "dir" / "m.py").read_text() == "x = 1\n"


def test_the_seed_is_copied_in_the_specs_env_is_set_and_the_seed_stays_untouched(
    backend: Backend, tmp_path: Path
) -> None:
    seed = tmp_path / "seed"
    (seed / "src").mkdir(parents=True)
    (seed / "src" / "a.py").write_text("print('a')\n")
    env = backend.make(seed_dir=str(seed), env={"TASK_VAR": "hello world"})
    assert env.execute("cat src/a.py; echo $TASK_VAR").output == "print('a')\nhello world\n"
    env.execute("echo changed > src/a.py")
    assert (seed / "src" / "a.py").read_text() == "print('a')\n"


def test_two_sandboxes_share_no_files(backend: Backend) -> None:
    a, b = backend.make(), backend.make()
    a.execute("echo mine > f.txt")
    assert b.execute("ls").output == ""
    assert b.execute("cat f.txt").returncode != 0
