"""What the container enforces: resource limits from the spec, no network, labels."""

from __future__ import annotations

import os
from pathlib import Path

CGROUP_PROBE = r"""
if [ -f /sys/fs/cgroup/memory.max ]; then
  echo mem=$(cat /sys/fs/cgroup/memory.max)
  echo cpu=$(cut -d' ' -f1,2 /sys/fs/cgroup/cpu.max | tr ' ' /)
  echo pids=$(cat /sys/fs/cgroup/pids.max)
else
  echo mem=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes)
  echo cpu=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us)/$(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)
  echo pids=$(cat /sys/fs/cgroup/pids/pids.max)
fi
"""


def _probe(env) -> dict[str, str]:
    res = env.execute(CGROUP_PROBE)
    assert res.returncode == 0, res.output
    return dict(line.split("=", 1) for line in res.output.split())


def test_resource_limits_are_visible_inside_the_container(make_docker_env) -> None:
    env = make_docker_env(cpus=1.5, memory_mb=256, pids_limit=64)
    got = _probe(env)
    assert int(got["mem"]) == 256 * 1024 * 1024
    quota, period = (int(x) for x in got["cpu"].split("/"))
    assert quota / period == 1.5
    assert got["pids"] == "64"


def test_pids_limit_stops_a_fork_bomb_and_the_container_survives(make_docker_env) -> None:
    env = make_docker_env(pids_limit=32)
    res = env.execute("for i in $(seq 60); do sleep 2 & done; wait", timeout=20)
    assert "fork" in res.output.lower() or "resource" in res.output.lower(), res.output
    env.execute("pkill sleep || true")
    assert env.execute("echo ok").output == "ok\n"


def test_no_network_means_only_loopback(make_docker_env) -> None:
    off = make_docker_env(network=False)
    assert off.execute("ls /sys/class/net").output.split() == ["lo"]
    res = off.execute("exec 3<>/dev/tcp/172.17.0.1/9 && echo connected", timeout=10)
    assert res.returncode != 0 and "connected" not in res.output
    assert "unreachable" in res.output.lower()
    on = make_docker_env(network=True)
    assert "eth0" in on.execute("ls /sys/class/net").output.split()


def test_containers_carry_run_labels_and_the_runner_pid(make_docker_env, docker_client) -> None:
    env = make_docker_env(
        labels={"mimoagent.run_id": "r-labels", "mimoagent.instance": "inst/1", "mimoagent.config": "cfg"}
    )
    labels = docker_client.containers.get(env.container.id).labels
    assert labels["mimoagent.run_id"] == "r-labels"
    assert labels["mimoagent.instance"] == "inst/1"
    assert labels["mimoagent.config"] == "cfg"
    assert labels["mimoagent.pid"] == str(os.getpid())


def test_host_ca_bundle_is_mounted_when_the_task_has_network(make_docker_env) -> None:
    on = make_docker_env(network=True)
    host = Path("/etc/ssl/certs/ca-certificates.crt").read_bytes()
    assert on.read_file("/etc/ssl/certs/ca-certificates.crt") == host
    assert on.execute("echo $NODE_EXTRA_CA_CERTS").output.strip() == "/etc/ssl/certs/ca-certificates.crt"
    off = make_docker_env(network=True, backend_kwargs={"ca_bundle": "none"})
    assert off.execute("echo ${NODE_EXTRA_CA_CERTS:-unset}").output.strip() == "unset"


def test_task_containers_are_unprivileged_limited_and_mount_no_host_path(make_docker_env) -> None:
    """The hostile-agent rules for a task container: not privileged, no added capability, no setuid
    escalation, a pids limit even when the row sets none, and no host path or socket mounted (the CA
    bundle of a network row is copied in)."""
    env = make_docker_env(network=True)
    env.container.reload()
    host = env.container.attrs["HostConfig"]
    assert host["Privileged"] is False and not host.get("CapAdd")
    assert "no-new-privileges" in (host.get("SecurityOpt") or [])
    assert host["PidsLimit"] == 4096
    assert not host.get("Binds") and not env.container.attrs.get("Mounts"), env.container.attrs.get("Mounts")
    bundle = env.execute("head -c 27 /etc/ssl/certs/ca-certificates.crt")
    assert bundle.returncode == 0 and bundle.output.startswith("-----BEGIN CERTIFICATE-----"), bundle.output


def test_begin_grading_ends_every_process_of_the_agent_and_keeps_its_files(make_docker_env) -> None:
    env = make_docker_env()
    env.execute(
        "echo work > /testbed/kept.txt; (setsid sh -c 'while :; do sleep 1; done' &) ; "
        "nohup sleep 600 >/dev/null 2>&1 &"
    )
    old_scratch = env.scratch_dir
    assert env.begin_grading() >= 2
    left = env.execute("ps -eo args= | grep -F -e 'sleep 600' -e 'sleep 1;' | grep -v grep")
    assert left.output.strip() == "", left.output
    assert env.execute("cat /testbed/kept.txt").output == "work\n"
    assert env.scratch_dir != old_scratch and env.execute(f"test -d {env.scratch_dir}").returncode == 0
