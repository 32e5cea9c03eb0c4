"""No container outlives its rollout: normal end, exceptions, Ctrl-C, threads, SIGKILL + cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mimo_core.environments.docker.cleanup import cleanup
from mimo_core.errors import SandboxError

ROOT = Path(__file__).resolve().parents[2]


def _containers(client, run_id: str) -> list:
    return client.containers.list(all=True, filters={"label": f"mimoagent.run_id={run_id}"})


def _runner(run_id: str, mode: str, n: int = 1) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.docker.runner_proc", run_id, mode, str(n)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    line = proc.stdout.readline()
    if mode != "raise":
        assert line.strip() == "READY", proc.stderr.read()
    return proc


def test_missing_image_without_dockerfile_is_a_clear_sandbox_error(make_docker_env) -> None:
    env = make_docker_env(image="registry.invalid/nope:1", start=False)
    with pytest.raises(SandboxError, match="registry.invalid/nope:1"):
        env.start()


def test_concurrent_rollouts_get_their_own_containers_and_leave_none(make_docker_env, docker_client) -> None:
    run_id = f"t-{uuid.uuid4().hex[:8]}"

    def one(i: int) -> str:
        env = make_docker_env(labels={"mimoagent.run_id": run_id, "mimoagent.instance": "same"}, start=False)
        try:
            env.start()
            env.write_file("/id", str(i).encode())
            return env.execute("cat /id; echo; hostname").output
        finally:
            env.stop()

    with ThreadPoolExecutor(8) as pool:
        outs = list(pool.map(one, range(8)))
    assert sorted(o.split()[0] for o in outs) == [str(i) for i in range(8)]
    assert len({o.split()[1] for o in outs}) == 8
    assert _containers(docker_client, run_id) == []


def test_uncaught_exception_in_the_runner_removes_its_containers(dockerd, docker_client) -> None:
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    proc = _runner(run_id, "raise", 2)
    assert proc.wait(timeout=60) != 0
    assert "runner crashed" in proc.stderr.read()
    assert _containers(docker_client, run_id) == []


def test_ctrl_c_of_the_runner_removes_its_containers(dockerd, docker_client) -> None:
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    proc = _runner(run_id, "hold", 2)
    assert len(_containers(docker_client, run_id)) == 2
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    assert _containers(docker_client, run_id) == []


def test_sigkilled_runner_leftovers_are_removed_by_stale_cleanup(dockerd, docker_client) -> None:
    dead, alive = f"t-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    killed = _runner(dead, "hold", 2)
    living = _runner(alive, "hold", 1)
    try:
        killed.kill()
        killed.wait()
        assert len(_containers(docker_client, dead)) == 2  # SIGKILL runs nothing
        assert cleanup(stale_only=True) >= 2
        assert _containers(docker_client, dead) == []
        assert len(_containers(docker_client, alive)) == 1  # a live runner's containers stay
        assert cleanup(run_id=alive) == 1
        assert _containers(docker_client, alive) == []
    finally:
        living.kill()
        living.wait()


def test_a_container_removed_from_outside_is_a_sandbox_error(make_docker_env, docker_client) -> None:
    env = make_docker_env()
    docker_client.containers.get(env.container.id).remove(force=True)
    with pytest.raises(SandboxError, match="cannot run commands"):
        env.execute("echo hi")
    env.stop()  # still safe
