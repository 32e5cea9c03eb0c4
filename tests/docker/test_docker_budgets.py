"""A container's budgets (environments/budgets.py): past its memory (an OOM kill in its cgroup) or its
disk (its writable layer's size) it is ended and says which; within them it keeps working."""

from __future__ import annotations

import pytest

from mimo_core.errors import SandboxError


def _ended(env) -> None:
    with pytest.raises(SandboxError):
        for _ in range(3):  # the container is killed: a command fails at once or the next one does
            env.execute("echo still here", timeout=30)


def test_a_fork_and_allocate_loop_past_the_memory_budget_ends_the_container(make_docker_env) -> None:
    env = make_docker_env(memory_mb=128)
    assert env.execute("head -c 50M /dev/zero | tail -c 50M > /dev/null; echo ok").output == "ok\n"
    assert env.budget_exceeded() is None  # within it
    env.execute("for i in $(seq 8); do (head -c 100M /dev/zero | tail -c 100M > /dev/null) & done; wait", timeout=60)
    over = env.budget_exceeded()
    assert over is not None and over.kind == "memory", over
    assert "memory budget (128 MB" in over.detail
    _ended(env)


def test_files_past_the_disk_budget_end_the_container(make_docker_env) -> None:
    env = make_docker_env(storage_mb=100)
    assert env.execute("head -c 20M /dev/zero > /tmp/small; echo ok").output == "ok\n"
    assert env.budget_exceeded() is None
    env.execute("head -c 150M /dev/zero > /tmp/big; echo rc=$?", timeout=60)
    over = env.budget_exceeded()
    assert over is not None and over.kind == "disk", over
    assert "past its disk budget (100 MB)" in over.detail
    _ended(env)


def test_a_small_shm_is_no_way_past_the_memory_budget(make_docker_env) -> None:
    env = make_docker_env(memory_mb=256)
    res = env.execute("head -c 200M /dev/zero > /dev/shm/fill; echo rc=$?")
    assert "No space left" in res.output and "rc=1" in res.output, res.output  # docker's 64 MB /dev/shm
    assert env.budget_exceeded() is None
    assert env.execute("echo ok").output == "ok\n"
