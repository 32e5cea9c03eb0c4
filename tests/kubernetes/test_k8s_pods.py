"""What the pod carries and enforces (limits, labels, scheduling, no network), the bounded start with
Kubernetes' own reason, the v4 exec protocol, and backend_kwargs checked when the config loads."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from mimo_core.config import read_config
from mimo_core.config_checks import check_config
from mimo_core.errors import ConfigError, SandboxError
from testkit.k8s_standin import V4, StandIn
from tests.docker.test_docker_sandbox import _probe

SCHEDULING = {
    "node_selector": {"kubernetes.io/os": "linux"},
    "service_account": "mimo-sandbox",
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "evals", "effect": "NoSchedule"}],
    "image_pull_secrets": ["regcred"],
    "active_deadline_seconds": 3600,
}


def test_pod_carries_limits_labels_and_scheduling_and_the_limits_hold_inside(make_k8s_env, k8s) -> None:
    labels = {"mimoagent.run_id": "r-labels", "mimoagent.instance": "inst/1", "mimoagent.config": "cfg"}
    env = make_k8s_env(cpus=1.5, memory_mb=256, labels=labels, env={"FOO": "bar"}, backend_kwargs=SCHEDULING)
    pod = env.core.read_namespaced_pod(env.pod, env.namespace)  # through the real client, as a V1Pod
    c = pod.spec.containers[0]
    assert c.image == "mimo-base:bookworm" and c.working_dir == "/testbed"
    assert c.resources.limits == {"cpu": "1500m", "memory": "256Mi"} == c.resources.requests
    assert {e.name: e.value for e in c.env}["FOO"] == "bar"
    assert pod.spec.node_selector == {"kubernetes.io/os": "linux"}
    assert pod.spec.service_account_name == "mimo-sandbox" and pod.spec.automount_service_account_token
    assert [(t.key, t.value, t.effect) for t in pod.spec.tolerations] == [("dedicated", "evals", "NoSchedule")]
    assert [s.name for s in pod.spec.image_pull_secrets] == ["regcred"]
    assert pod.spec.active_deadline_seconds == 3600 and pod.spec.restart_policy == "Never"
    meta = pod.metadata
    assert meta.labels["mimoagent.run_id"] == "r-labels" and meta.labels["mimoagent.config"] == "cfg"
    assert meta.labels["mimoagent.instance"].startswith("inst-1-")  # "/" is not allowed in a label value
    assert meta.annotations["mimoagent.instance"] == "inst/1"  # the exact value
    assert meta.labels["mimoagent.pid"] == str(__import__("os").getpid())
    got = _probe(env)
    assert int(got["mem"]) == 256 * 1024 * 1024
    quota, period = (int(x) for x in got["cpu"].split("/"))
    assert quota / period == 1.5


def test_no_network_task_gets_a_deny_all_policy_and_only_loopback(make_k8s_env, k8s) -> None:
    off = make_k8s_env(network=False)
    policy = k8s.policies[(off.namespace, off.pod)]
    assert policy["spec"] == {
        "podSelector": {"matchLabels": {"mimoagent.sandbox": off.pod}},
        "policyTypes": ["Ingress", "Egress"],
    }
    assert off.execute("ls /sys/class/net").output.split() == ["lo"]
    on = make_k8s_env(network=True)
    assert (on.namespace, on.pod) not in k8s.policies
    assert on.execute("ls /sys/class/net").output.split() != ["lo"]


def test_unschedulable_pod_is_an_environment_error_naming_the_reason(make_k8s_env, k8s) -> None:
    env = make_k8s_env(backend_kwargs={"node_selector": {"pool": "gpu"}, "pod_start_timeout": 2}, start=False)
    start = time.monotonic()
    with pytest.raises(SandboxError, match=r"did not start within 2s: Unschedulable: 0/1 nodes are available") as e:
        env.start()
    assert e.value.status == "environment_error" and time.monotonic() - start < 15
    pod = env.pod
    env.stop()
    assert (env.namespace, pod) not in k8s.pods


def test_image_that_cannot_be_pulled_fails_fast_with_image_pull_backoff(make_k8s_env, k8s) -> None:
    env = make_k8s_env(image="registry.invalid/nope:1", start=False, startup_timeout=120)
    start = time.monotonic()
    with pytest.raises(SandboxError, match=r"registry.invalid/nope:1.*ImagePullBackOff"):
        env.start()
    assert time.monotonic() - start < 15  # not the 120 s start timeout
    env.stop()


def test_exec_and_files_work_over_the_v4_protocol(make_k8s_env, tmp_path: Path) -> None:
    """API servers before 1.30 speak only v4, which cannot close stdin: data is read by `head -c`."""
    from testkit.dockerd import DOCKER_HOST

    old = StandIn(DOCKER_HOST, protocols=(V4,))
    old.start()
    try:
        env = make_k8s_env(backend_kwargs={"kubeconfig": str(old.write_kubeconfig(tmp_path / "kubeconfig"))})
        probe = env.open(["true"])
        assert probe.ws.subprotocol == V4 and not probe.v5
        probe.close()
        assert env.execute("cat /proc/1/cmdline | tr '\\0' ' '; echo; echo $X", env={"X": "y"}).output.endswith("y\n")
        env.write_file("big.bin", bytes(range(256)) * 4096, mode=0o600)
        assert env.read_file("big.bin") == bytes(range(256)) * 4096
        assert env.execute("stat -c %a big.bin").output == "600\n"
        (tmp_path / "d").mkdir()
        (tmp_path / "d" / "f.txt").write_text("x")
        env.copy_in(tmp_path / "d", "/work")
        env.copy_out("/work", tmp_path / "back")
        assert (tmp_path / "back" / "f.txt").read_text() == "x"
        env.stop()
    finally:
        old.stop()


def test_an_api_server_that_is_not_there_is_an_environment_error(make_k8s_env, tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "gone",
                "clusters": [{"name": "gone", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "gone", "user": {"token": "t"}}],
                "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "gone"}}],
            }
        )
    )
    env = make_k8s_env(backend_kwargs={"kubeconfig": str(kubeconfig)}, start=False)
    with pytest.raises(SandboxError, match=rf"cannot reach the Kubernetes API server at http://127.0.0.1:{port}"):
        env.start()
    env.stop()


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"namespace": "Bad_NS"}, "namespace"),
        ({"image_pull_secrets": ["has space"]}, "image_pull_secrets"),
        ({"tolerations": [{"key": "a", "operator": "Sometimes"}]}, "tolerations.0.operator"),
        ({"node_selector": {"pool": "a/b"}}, "node_selector"),
        ({"nodeSelector": {"pool": "a"}}, "nodeSelector: unknown key"),
    ],
)
def test_backend_kwargs_are_checked_when_the_config_loads(tmp_path: Path, kwargs, problem) -> None:
    path = tmp_path / "k8s.yaml"
    path.write_text(yaml.safe_dump({"environment": {"environment_class": "kubernetes", "backend_kwargs": kwargs}}))
    with pytest.raises(ConfigError, match=rf"k8s.yaml: environment.backend_kwargs \(kubernetes\): {problem}"):
        check_config(read_config(path))
