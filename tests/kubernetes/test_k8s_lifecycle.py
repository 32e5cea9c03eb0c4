"""No pod outlives its rollout: normal end, errors, Ctrl-C, SIGTERM, SIGKILL + cleanup (stand-in pods)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from mimo_core.environments.kubernetes.cleanup import cleanup
from mimo_core.errors import SandboxError

ROOT = Path(__file__).resolve().parents[2]


def _pods(k8s, run_id: str) -> list[str]:
    return [
        name
        for (_, name), p in list(k8s.pods.items())
        if (p["metadata"].get("labels") or {}).get("mimoagent.run_id") == run_id
    ]


def _policies(k8s) -> set[str]:
    return {name for _, name in list(k8s.policies)}


def _containers(k8s, run_id: str) -> list:
    return k8s.docker.containers.list(all=True, filters={"label": f"k8s-standin/mimoagent.run_id={run_id}"})


def _orphan_policy(run_id: str, pid: int) -> str:
    from kubernetes import client

    from mimo_core.environments.kubernetes.client import client_config
    from mimo_core.environments.kubernetes.pods import KubernetesOptions, deny_all_policy
    from mimo_core.environments.owners import owner_labels

    name = f"mimo-orphan-{uuid.uuid4().hex[:6]}"
    labels = {"mimoagent.run_id": run_id, **owner_labels(), "mimoagent.pid": str(pid)}
    conf, namespace = client_config(KubernetesOptions())
    with client.ApiClient(conf) as api:
        client.NetworkingV1Api(api).create_namespaced_network_policy(namespace, deny_all_policy(name, labels))
    return name


def _runner(run_id: str, mode: str, n: int = 1) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.kubernetes.runner_proc", run_id, mode, str(n)],
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


def test_a_pod_deleted_from_outside_is_a_sandbox_error(make_k8s_env, k8s) -> None:
    env = make_k8s_env()
    from kubernetes import client

    client.CoreV1Api(env.api).delete_namespaced_pod(env.pod, env.namespace)
    with pytest.raises(SandboxError, match="cannot run commands"):
        env.execute("echo hi")
    env.stop()  # still safe


def test_uncaught_exception_in_the_runner_deletes_its_pods(k8s) -> None:
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    proc = _runner(run_id, "raise", 2)
    assert proc.wait(timeout=60) != 0
    assert "runner crashed" in proc.stderr.read()
    assert _pods(k8s, run_id) == [] and _containers(k8s, run_id) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_of_the_runner_deletes_its_pods_and_policies(k8s, sig) -> None:
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    proc = _runner(run_id, "hold", 2)
    held = _pods(k8s, run_id)
    assert len(held) == 2 and len(set(held) & _policies(k8s)) == 1  # one of the two has no network
    proc.send_signal(sig)
    proc.wait(timeout=60)
    assert _pods(k8s, run_id) == [] and not set(held) & _policies(k8s)
    assert _containers(k8s, run_id) == []


def test_sigkilled_runner_leftovers_go_with_stale_cleanup_and_the_cleanup_command(k8s) -> None:
    dead, alive = f"t-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    killed = _runner(dead, "hold", 2)
    living = _runner(alive, "hold", 1)
    try:
        killed.kill()
        killed.wait()
        held = _pods(k8s, dead)
        assert len(held) == 2  # SIGKILL runs nothing
        orphan = _orphan_policy(dead, killed.pid)  # its pod never came: the runner died in between
        assert cleanup(stale_only=True) >= 2
        assert _pods(k8s, dead) == [] and not (set(held) | {orphan}) & _policies(k8s)
        assert len(_pods(k8s, alive)) == 1  # a live runner's pods stay
        cmd = [sys.executable, "-m", "mimo_core.cli", "cleanup", "--run-id", alive]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60, env={**os.environ})
        assert proc.returncode == 2 and "0 pod(s)" in proc.stdout, proc.stdout + proc.stderr  # its runner lives
        assert "left 1 sandbox(es) alone because their run is still going: pod " in proc.stderr
        assert len(_pods(k8s, alive)) == 1
        proc = subprocess.run(
            [*cmd, "--force"], cwd=ROOT, capture_output=True, text=True, timeout=60, env={**os.environ}
        )
        assert proc.returncode == 0 and "1 pod(s)" in proc.stdout, proc.stdout + proc.stderr
        assert _pods(k8s, alive) == [] and _containers(k8s, alive) == []
    finally:
        living.kill()
        living.wait()


def test_api_calls_from_other_threads_while_commands_open_their_streams_still_work(make_k8s_env, k8s) -> None:
    """`kubernetes.stream.stream` swaps its ApiClient's request method for a websocket call while it
    connects. A REST call on that ApiClient from another thread at that moment went out as a websocket
    handshake and failed: under load, a stop's pod delete failed that way while the signal thread opened
    its `kill` exec, and the pod was left behind. Streams open on a client of their own now."""
    import threading

    env = make_k8s_env()
    stop, failures, reads = threading.Event(), [], [0]

    def read_the_pod() -> None:
        while not stop.is_set():
            try:
                env.core.read_namespaced_pod(env.pod, env.namespace)
                reads[0] += 1
            except Exception as e:  # the bug: ApiException(0) from a websocket handshake
                failures.append(repr(e)[:200])

    def run_commands() -> None:
        for _ in range(20):
            assert env.execute("true").returncode == 0

    readers = [threading.Thread(target=read_the_pod) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        with_commands = [threading.Thread(target=run_commands) for _ in range(2)]
        for t in with_commands:
            t.start()
        for t in with_commands:
            t.join()
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert failures == [] and reads[0] > 0, failures[:3]
    assert env.execute("echo still").output == "still\n"
    key = (env.namespace, env.pod)
    env.stop()
    assert key not in k8s.pods
