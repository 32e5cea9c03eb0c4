"""A real multi-node Ray cluster on this one machine, for tests and benchmarks: a head and N worker nodes,
each its own raylet process (`ray.cluster_utils.Cluster`), with a private temp dir and free ports.

The cluster lives in a child process (`python -m testkit.ray_cluster`) driven by lines on its
stdin (`add`, `remove <node id>`), so the caller's process never imports Ray for it and stopping it ends
every process it started. Everything listens on 127.0.0.1 only: Ray's single-machine mode
(`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, which `env` also gives the drivers). Nodes on one machine share
its filesystem; the Ray runner never relies on that (rollout files travel back with the result).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# Loopback only, no usage reports, and workers run the installed Python rather than `uv run` in an uploaded copy.
LOOPBACK_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RayTestCluster:
    """`start()` brings up a head (`head_cpus`, default 0: rollouts run on worker nodes) and `workers` worker
    nodes of `cpus_per_node` CPUs and `resources`; `address` is what `--ray-address` takes."""

    def __init__(
        self,
        workers: int = 2,
        cpus_per_node: float = 2,
        head_cpus: float = 0,
        resources: dict[str, float] | None = None,
        cluster_env: dict[str, str] | None = None,
    ):
        self.spec = {"workers": workers, "cpus": cpus_per_node, "head_cpus": head_cpus, "resources": resources or {}}
        self.cluster_env = dict(cluster_env or {})  # e.g. RAY_AUTH_MODE=token and its RAY_AUTH_TOKEN
        self.temp_dir = tempfile.mkdtemp(prefix="mray-", dir="/tmp")  # short: socket paths must stay < 108 bytes
        self.proc: subprocess.Popen[str] | None = None
        self.address = ""
        self.worker_ids: list[str] = []

    @property
    def env(self) -> dict[str, str]:
        """What a driver's environment needs to reach this cluster on 127.0.0.1."""
        return dict(LOOPBACK_ENV)

    def start(self, timeout: float = 180) -> RayTestCluster:
        env = {**os.environ, **LOOPBACK_ENV, **self.cluster_env, "RAY_TMPDIR": self.temp_dir}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "testkit.ray_cluster", json.dumps(self.spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        words = self._reply(timeout)
        self.address, self.worker_ids = words[1], words[2:]
        return self

    def _reply(self, timeout: float) -> list[str]:
        import select

        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line.strip():
            self.stop()
            raise RuntimeError(f"the test Ray cluster did not answer in {timeout:g}s (logs: {self.temp_dir})")
        return line.split()

    def _ask(self, command: str, timeout: float = 120) -> list[str]:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._reply(timeout)

    def add_worker(self, env: dict[str, str] | None = None, resources: dict[str, float] | None = None) -> str:
        """One more worker node; `env` is its environment (e.g. its own DOCKER_HOST) on top of the cluster's,
        `resources` replaces the cluster's custom resources for it."""
        node_id = self._ask("add " + json.dumps({"env": env or {}, "resources": resources}))[1]
        self.worker_ids.append(node_id)
        return node_id

    def remove_worker(self, node_id: str) -> None:
        """Kill a worker node's raylet and its workers at once, as a lost machine would go."""
        self._ask(f"remove {node_id}")
        self.worker_ids.remove(node_id)

    def stop(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stdin.close()  # type: ignore[union-attr]  # EOF: the child shuts the cluster down
                self.proc.wait(timeout=60)
            except (subprocess.TimeoutExpired, OSError, ValueError):
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            self.proc = None
        shutil.rmtree(self.temp_dir, ignore_errors=True)


@contextmanager
def ray_cluster(workers: int = 2, cpus_per_node: float = 2, **kwargs: Any) -> Iterator[RayTestCluster]:
    cluster = RayTestCluster(workers, cpus_per_node, **kwargs)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _node_args(cpus: float, resources: dict[str, float]) -> dict[str, Any]:
    return {
        "num_cpus": cpus,
        "resources": resources,
        "include_dashboard": False,
        "node_ip_address": "127.0.0.1",
        "object_store_memory": 80 * 1024 * 1024,
        "min_worker_port": 0,
        "max_worker_port": 0,
        "dashboard_port": _free_port(),
        "dashboard_agent_listen_port": _free_port(),
        "metrics_export_port": _free_port(),
        "runtime_env_agent_port": _free_port(),
    }


def _serve(spec: dict[str, Any]) -> None:
    """The child: start the cluster, print `up <address> <worker ids>`, then obey stdin until EOF."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True, head_node_args={**_node_args(spec["head_cpus"], {}), "gcs_server_port": _free_port()}
    )
    nodes = {}
    try:
        for _ in range(spec["workers"]):  # started side by side, then awaited together
            node = cluster.add_node(wait=False, **_node_args(spec["cpus"], dict(spec["resources"])))
            nodes[node.node_id] = node
        cluster.wait_for_nodes(timeout=120)
        print("up", cluster.address, *nodes, flush=True)
        for line in sys.stdin:
            words = line.split()
            if words[:1] == ["add"]:
                extra = json.loads(line.split(None, 1)[1])
                os.environ.update(extra["env"])  # a node's processes inherit this process's environment
                resources = extra["resources"] if extra["resources"] is not None else spec["resources"]
                node = cluster.add_node(**_node_args(spec["cpus"], dict(resources)))
                nodes[node.node_id] = node
                print("added", node.node_id, flush=True)
            elif words[:1] == ["remove"]:
                cluster.remove_node(nodes.pop(words[1]), allow_graceful=False)
                print("removed", words[1], flush=True)
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    _serve(json.loads(sys.argv[1]))
