"""The docker backend: one long-running container per rollout, driven through the docker SDK.

The bash tool's persistent shells are `docker exec -i bash` streams kept open (docker_shell.py, with
shell.py's protocol). Other commands are `docker exec`s of `bash -c`. Like the local backend, the
command's output goes to a file inside the container and the exec waits for bash only, so a background
job that keeps stdout open cannot hold the call hostage. Every exec carries a random marker in its
environment; a timeout kills every process that carries it (also ones that left the process group), and
the container keeps working. Files travel as tar archives (put_archive / get_archive).

Containers are labelled (run id, instance, config, the runner's host and pid) and removed by `stop()`;
an atexit hook removes any a dying runner still holds, and `docker_cleanup.cleanup()` removes what a
SIGKILLed runner left. The `docker` package is imported lazily so `mimoagent --help` stays fast.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from mimo_core.environments import docker_registry, live
from mimo_core.environments.base import LABEL_INSTANCE, LABEL_RUN_ID, ExecResult, SandboxSpec
from mimo_core.environments.docker_files import ContainerFiles
from mimo_core.environments.docker_shell import kill_script, open_shell
from mimo_core.environments.docker_streams import MAX_CAPTURE, FrameReader
from mimo_core.environments.shell import ShellSession, ShellStream
from mimo_core.errors import SandboxError

if TYPE_CHECKING:
    from mimo_core.config import EnvironmentConfig

HOST_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
_CA_VARS = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT", "NODE_EXTRA_CA_CERTS",
            "GIT_SSL_CAINFO")
_QUIET = {"TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "MANPAGER": "cat", "NO_COLOR": "1"}
# PID 1 of every container. As PID 1 it ignores signals sent from inside the container, so an agent's
# `pkill sleep` or `kill -9 -1` cannot end the container; its `wait` also reaps orphaned zombies.
KEEPALIVE = "trap 'exit 0' TERM; while :; do sleep 86400 & wait $!; done"
_KILL_GRACE = 5.0  # seconds to wait for an exec's stream to end after its processes were killed


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


def _name_part(text: str, n: int) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", text).strip("-._")[:n] or "x"


class DockerEnvironment(ContainerFiles):
    """One container per rollout (or per separate verifier), removed by `stop()` whatever happened."""

    inline_output = True  # the host cannot see the container's files: a shell prints each call's output
    options_model = DockerOptions  # what environment.backend_kwargs may hold, checked at config load

    def __init__(self, spec: SandboxSpec, config: EnvironmentConfig, **_: Any) -> None:
        self.spec = spec.model_copy(deep=True)
        self.config = config
        try:
            self.options = DockerOptions.model_validate(config.backend_kwargs)
        except Exception as e:
            raise SandboxError(f"environment.backend_kwargs (docker): {e}") from None
        self.scratch_dir = self.options.scratch_dir
        self.client: Any = None
        self.container: Any = None
        self.image: str | None = None
        self._sessions: dict[str, ShellSession] = {}

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        import docker
        import docker.errors

        try:
            if self.options.docker_host:
                self.client = docker.DockerClient(base_url=self.options.docker_host, version="auto",
                                                  timeout=int(self.config.startup_timeout))
            else:
                self.client = docker.from_env(version="auto", timeout=int(self.config.startup_timeout))
        except docker.errors.DockerException as e:
            raise SandboxError(f"cannot reach the Docker engine ({os.environ.get('DOCKER_HOST', 'default socket')}):"
                               f" {e}") from None
        from mimo_core.environments.docker_images import ensure_image

        self.image = ensure_image(self.client, self.spec.image, self.spec.dockerfile_dir,
                                  self.spec.build_timeout or self.config.startup_timeout, self.options.fallback_image,
                                  image_prefix=self.config.image_prefix)
        try:
            self.container = self._create()
            live.track(self)
            self.container.start()
        except docker.errors.APIError as e:
            raise SandboxError(f"container from {self.image} failed to start: {e.explanation or e}") from None
        dirs = " ".join(shlex.quote(d) for d in (self.spec.cwd, self.scratch_dir))
        probe = self.execute(f"mkdir -p {dirs}", timeout=60, cwd="/")
        if probe.returncode != 0:
            raise SandboxError(f"container from {self.image} cannot run bash: {probe.output.strip()[:500]}")
        if self.spec.seed_dir:
            seed = Path(self.spec.seed_dir)
            if not seed.is_dir():
                raise SandboxError(f"seed_dir {seed} is not a folder")
            self.copy_in(seed, self.spec.cwd)

    def _create(self) -> Any:
        spec, opts = self.spec, self.options
        labels = {**spec.labels, **docker_registry.owner_labels()}
        name = "mimo-{}-{}-{}".format(_name_part(labels.get(LABEL_INSTANCE, "task"), 40),
                                      _name_part(labels.get(LABEL_RUN_ID, "run"), 20),
                                      secrets.token_hex(3))
        env = {**_QUIET, **spec.env}
        network_mode = opts.network_mode if spec.network else "none"
        volumes: dict[str, dict[str, str]] = {}
        ca = HOST_CA_BUNDLE if opts.ca_bundle == "auto" else opts.ca_bundle
        if spec.network and ca != "none" and os.path.isfile(ca):
            volumes[os.path.realpath(ca)] = {"bind": HOST_CA_BUNDLE, "mode": "ro"}
            for var in _CA_VARS:
                env.setdefault(var, HOST_CA_BUNDLE)
        for host_path, path in spec.mounts.items():  # on a remote engine the path is the engine host's
            volumes[host_path] = {"bind": path, "mode": "ro"}
        kwargs: dict[str, Any] = dict(
            image=self.image, name=name, entrypoint=["/bin/sh", "-c", KEEPALIVE], command=[], detach=True,
            working_dir=spec.cwd, environment=env, labels=labels, volumes=volumes, init=opts.init,
            extra_hosts=opts.extra_hosts or None, stdin_open=False, tty=False,
        )
        if network_mode:
            kwargs["network_mode"] = network_mode
        if spec.cpus:
            kwargs["nano_cpus"] = int(spec.cpus * 1e9)
        if spec.memory_mb:
            kwargs["mem_limit"] = f"{spec.memory_mb}m"
            kwargs["memswap_limit"] = f"{spec.memory_mb}m"
        if spec.pids_limit:
            kwargs["pids_limit"] = spec.pids_limit
        if opts.user:
            kwargs["user"] = opts.user
        if opts.shm_size:
            kwargs["shm_size"] = opts.shm_size
        return self.client.containers.create(**kwargs)

    def stop(self) -> None:
        """Remove the container (forcefully: PID 1 ignores polite signals). Idempotent."""
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()
        container, self.container = self.container, None
        if container is not None:
            docker_registry.remove(container.id, self.client)
        live.untrack(self)
        if self.client is not None:
            try:
                self.client.close()
            except Exception:
                pass
            self.client = None

    # -- commands ----------------------------------------------------------------------------------

    def _require(self) -> Any:
        if self.container is None:
            raise SandboxError("DockerEnvironment used before start() or after stop()")
        return self.container

    def execute(
        self, command: str, timeout: float | None = None, cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        container = self._require()
        timeout = self.spec.timeout if timeout is None else timeout
        marker = secrets.token_hex(8)
        out = f"{self.scratch_dir}/out.{marker}"
        script = (f"bash -c {shlex.quote(command)} </dev/null >{out} 2>&1; __mimo_rc=$?; "
                  f"cat {out} 2>/dev/null; rm -f {out}; exit $__mimo_rc")
        wrapper = f"mkdir -p {shlex.quote(self.scratch_dir)} 2>/dev/null; {script}"
        workdir = cwd if cwd is None or cwd.startswith("/") else f"{self.spec.cwd.rstrip('/')}/{cwd}"
        api = self.client.api
        start = time.monotonic()
        import docker.errors

        try:
            exec_id = api.exec_create(container.id, ["bash", "-c", wrapper], stdout=True, stderr=True,
                                      environment={**(env or {}), "MIMO_EXEC_ID": marker},
                                      workdir=workdir or self.spec.cwd)["Id"]
            sock = api.exec_start(exec_id, socket=True)
        except docker.errors.APIError as e:  # the container died (OOM of PID 1, removed from outside)
            raise SandboxError(f"container {container.name} cannot run commands: {e.explanation or e}") from None
        raw = getattr(sock, "_sock", sock)
        reader = FrameReader()
        deadline = start + timeout
        timed_out = False
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    if timed_out:
                        break  # killed, yet something still holds the stream: give up on it
                    timed_out = True
                    self._kill(marker)
                    deadline = time.monotonic() + _KILL_GRACE
                    continue
                raw.settimeout(remaining)
                try:
                    chunk = raw.recv(65536)
                except TimeoutError:
                    continue
                if not chunk:
                    break
                reader.feed(chunk)
        finally:
            sock.close()
        output = reader.text()
        if timed_out:
            output += self._leftover_output(out)
            returncode = -9
        else:
            code = api.exec_inspect(exec_id).get("ExitCode")
            returncode = 1 if code is None else int(code)
        return ExecResult(output=output, returncode=returncode, timed_out=timed_out,
                          duration_s=time.monotonic() - start)

    def interrupt(self) -> None:
        """Kill every process of the container but its PID 1, now (any thread): running commands return."""
        container = self.container
        if container is not None:
            try:
                container.exec_run(["sh", "-c", "kill -9 -1"])
            except Exception:
                pass

    def _kill(self, marker: str, name: str = "MIMO_EXEC_ID", holding: str = "", spare: str = "") -> None:
        """SIGKILL every process carrying `name=marker` in its environment (or holding `holding` open)."""
        try:
            self._require().exec_run(["sh", "-c", kill_script(f"{name}={marker}", holding, spare)],
                                     environment={"MIMO_KILLER": "1"})
        except Exception:
            pass  # the container is gone: the caller will find out on its next call

    def _leftover_output(self, out: str) -> str:
        """What a killed command wrote before it died (its output file was never printed)."""
        q = shlex.quote(out)
        res = self.container.exec_run(
            ["sh", "-c", f"head -c {MAX_CAPTURE} {q} 2>/dev/null; rm -f {q}"], demux=False)
        return (res.output or b"").decode("utf-8", errors="replace")

    # -- persistent shells (the ShellHost side of shell.py) -----------------------------------------

    def shell(self, name: str = "main") -> ShellSession:
        """The rollout's persistent shell called `name`, started on first use."""
        self._require()
        session = self._sessions.get(name)
        if session is None:
            session = self._sessions[name] = ShellSession(self, name, self.spec.cwd)
        return session

    def open_shell_stream(self, cwd: str) -> ShellStream:
        return open_shell(self.client, self._require(), cwd)

    def kill_call(self, nonce: str, out: str, shell_pid: str) -> None:
        self._kill(nonce, "MIMO_CALL", out, shell_pid)

    def read_output(self, path: str) -> bytes:
        q = shlex.quote(path)
        try:
            res = self._require().exec_run(["sh", "-c", f"head -c {MAX_CAPTURE} {q} 2>/dev/null; rm -f {q}"])
        except Exception:
            return b""
        return res.output or b""

    # -- files -------------------------------------------------------------------------------------
