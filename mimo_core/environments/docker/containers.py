"""How the docker backend's containers are made: the task's (its name, labels, limits, network, the
read-only install mounts, the CA bundle's variables) and the pristine reference that grading compares the
system against (container/system_files.py). `environment.py` drives them once they exist."""

from __future__ import annotations

import contextlib
import io
import os
import re
import secrets
import tarfile
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mimo_core.environments.base import LABEL_INSTANCE, LABEL_RUN_ID, SandboxSpec
from mimo_core.environments.container.base import KEEPALIVE, QUIET_ENV
from mimo_core.environments.docker.registry import remove
from mimo_core.environments.owners import owner_labels
from mimo_core.errors import SandboxError

HOST_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
_NO_STORAGE_OPT: set[str] = set()  # engines whose storage driver refused a container size (storage_opt)
_CA_VARS = (
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "PIP_CERT",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
)


class DockerOptions(BaseModel):
    """`environment.backend_kwargs` for the docker backend. Unknown keys are an error, not ignored."""

    model_config = ConfigDict(extra="forbid")

    docker_host: str | None = None  # default: DOCKER_HOST / the local socket
    network_mode: str | None = None  # e.g. "host" (tests reach 127.0.0.1); no-network tasks force "none"
    ca_bundle: Literal["auto", "none"] | str = "auto"  # auto: the host bundle, when the task has network
    scratch_dir: str = "/tmp/.mimo"
    # Image for tasks whose own image can be neither found, pulled nor built (or that name none); the
    # dataset type seeds the repository (repo_archive / repo_dir) into it. Offline demos and CI use it.
    fallback_image: str | None = None
    user: str | None = None
    init: bool = False  # docker's init as PID 1; by default PID 1 is our shell loop (see KEEPALIVE)
    extra_hosts: dict[str, str] = {}
    shm_size: str | None = None
    # Limits every task container gets unless its row sets its own: a fork bomb stays inside.
    pids_limit: int | None = Field(default=4096, gt=0)
    no_new_privileges: bool = True  # setuid programs cannot raise the agent's privileges


def _name_part(text: str, n: int) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", text).strip("-._")[:n] or "x"


def create_container(client: Any, image: str | None, spec: SandboxSpec, opts: DockerOptions, ca_bundle: bool) -> Any:
    """The task's container, created (not started): PID 1 the keep-alive loop, the limits of the row or
    the options, no privileges beyond the engine's default, the network only when the task has one."""
    labels = {**spec.labels, **owner_labels()}
    name = "mimo-{}-{}-{}".format(
        _name_part(labels.get(LABEL_INSTANCE, "task"), 40),
        _name_part(labels.get(LABEL_RUN_ID, "run"), 20),
        secrets.token_hex(3),
    )
    env = {**QUIET_ENV, **spec.env}
    network_mode = opts.network_mode if spec.network else "none"
    volumes: dict[str, dict[str, str]] = {}
    if ca_bundle:  # copied in once the container runs: no host path is mounted for it
        for var in _CA_VARS:
            env.setdefault(var, HOST_CA_BUNDLE)
    # The one kind of host folder a task container gets: the CLI agents' install cache, read-only
    # (framework-owned, no task data); on a remote engine the path is the engine host's.
    for host_path, path in spec.mounts.items():
        volumes[host_path] = {"bind": path, "mode": "ro"}
    kwargs: dict[str, Any] = dict(
        image=image,
        name=name,
        entrypoint=["/bin/sh", "-c", KEEPALIVE],
        command=[],
        detach=True,
        working_dir=spec.cwd,
        environment=env,
        labels=labels,
        volumes=volumes,
        init=opts.init,
        extra_hosts=opts.extra_hosts or None,
        stdin_open=False,
        tty=False,
    )
    if network_mode:
        kwargs["network_mode"] = network_mode
    if spec.cpus:
        kwargs["nano_cpus"] = int(spec.cpus * 1e9)
    if spec.memory_mb:  # (/dev/shm, a tmpfs of shm_size, 64 MB by default, counts in it)
        kwargs["mem_limit"] = f"{spec.memory_mb}m"
        kwargs["memswap_limit"] = f"{spec.memory_mb}m"
    if spec.storage_mb and client.api.base_url not in _NO_STORAGE_OPT:
        kwargs["storage_opt"] = {"size": f"{spec.storage_mb}M"}
    if spec.pids_limit or opts.pids_limit:
        kwargs["pids_limit"] = spec.pids_limit or opts.pids_limit
    if opts.no_new_privileges:
        kwargs["security_opt"] = ["no-new-privileges"]
    kwargs["privileged"] = False  # and no cap_add: the engine's default capabilities, nothing more
    if opts.user:
        kwargs["user"] = opts.user
    if opts.shm_size:
        kwargs["shm_size"] = opts.shm_size
    import docker.errors

    try:
        return client.containers.create(**kwargs)
    except docker.errors.APIError as e:
        if "storage_opt" not in kwargs or "storage" not in str(e).lower():
            raise
        # overlay2 takes a size only on xfs with project quotas: the budget watchdog alone enforces it
        _NO_STORAGE_OPT.add(client.api.base_url)
        del kwargs["storage_opt"]
        return client.containers.create(**kwargs)


class ReferenceContainer:
    """A reference container's commands (stdout alone) and file writes."""

    def __init__(self, client: Any, container: Any) -> None:
        self.client, self.container = client, container

    def exec_bytes(self, script: str, stdin: bytes = b"", timeout: float = 300.0) -> tuple[int, bytes, str]:
        res = self.container.exec_run(["sh", "-c", script], user="0", demux=True)
        out, err = res.output or (None, None)
        return int(res.exit_code if res.exit_code is not None else 1), out or b"", (err or b"").decode(errors="replace")

    def write_file(self, path: str, data: bytes, mode: int | None = None) -> None:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(os.path.basename(path))
            info.size, info.mode = len(data), mode or 0o600
            tar.addfile(info, io.BytesIO(data))
        if not self.container.put_archive(os.path.dirname(path) or "/", buf.getvalue()):
            raise SandboxError(f"writing {path} in the reference container failed")


@contextlib.contextmanager
def reference_container(client: Any, image: str | None, spec: SandboxSpec) -> Iterator[ReferenceContainer]:
    """A container of the same image, never touched, without network; removed on exit."""
    labels = {**spec.labels, **owner_labels()}
    labels[LABEL_INSTANCE] = f"{labels.get(LABEL_INSTANCE, 'task')}-reference"
    ref = ReferenceContainer(
        client,
        client.containers.create(
            image=image,
            entrypoint=["/bin/sh", "-c", KEEPALIVE],
            command=[],
            detach=True,
            network_mode="none",
            labels=labels,
            user="0",
            security_opt=["no-new-privileges"],
        ),
    )
    try:
        ref.container.start()
        yield ref
    finally:
        remove(ref.container.id, client)
