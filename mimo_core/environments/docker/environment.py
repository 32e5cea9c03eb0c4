"""The docker backend: one long-running container per rollout, driven through the docker SDK.

The bash tool's persistent shells are `docker exec -i bash` streams kept open (docker/shell.py, with
environments/shell.py's protocol). Other commands are `docker exec`s of `bash -c`. Like the local backend, the
command's output goes to a file inside the container and the exec waits for bash only, so a background
job that keeps stdout open cannot hold the call hostage. Every exec carries a random marker in its
environment; a timeout kills every process that carries it (also ones that left the process group), and
the container keeps working. Files travel as tar archives (put_archive / get_archive).

Containers are labelled (run id, instance, config, the runner's host and pid) and removed by `stop()`;
an atexit hook removes any a dying runner still holds, and `docker/cleanup.py`'s `cleanup()` removes what a
SIGKILLed runner left. How the containers are made is `docker/containers.py`. The `docker` package is
imported lazily so `mimoagent --help` stays fast.
"""

from __future__ import annotations

import os
import secrets
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mimo_core.environments import live
from mimo_core.environments.base import Capabilities, ExecResult
from mimo_core.environments.budgets import BudgetWatch, Exceeded, disk_exceeded, memory_exceeded
from mimo_core.environments.container.base import EXEC_MARKER, KILL_GRACE, ContainerEnvironment, capture_script
from mimo_core.environments.docker.containers import (
    HOST_CA_BUNDLE,
    DockerOptions,
    create_container,
    reference_container,
)
from mimo_core.environments.docker.files import ContainerFiles
from mimo_core.environments.docker.registry import remove
from mimo_core.environments.docker.shell import open_shell
from mimo_core.environments.docker.streams import FrameReader
from mimo_core.environments.shell import ShellStream
from mimo_core.errors import SandboxError

if TYPE_CHECKING:
    from mimo_core.config import EnvironmentConfig


class DockerEnvironment(ContainerFiles, ContainerEnvironment):
    """One container per rollout (or per separate verifier), removed by `stop()` whatever happened."""

    options_model = DockerOptions  # what environment.backend_kwargs may hold, checked at config load
    backend_name = "docker"

    @staticmethod
    def capabilities(config: EnvironmentConfig) -> Capabilities:
        return Capabilities(host_files=False, image_tasks=True, confined=True, network_isolation=True, host_mounts=True)

    @staticmethod
    def sweep_stale(configs: list[EnvironmentConfig]) -> None:
        """Containers of dead runners of this host, on the default engine."""
        from mimo_core.environments.docker.cleanup import cleanup

        cleanup(stale_only=True)

    def __init__(self, spec: Any, config: EnvironmentConfig, **_: Any) -> None:
        super().__init__(spec, config)
        self.client: Any = None
        self.container: Any = None
        self._watch: BudgetWatch | None = None  # memory and disk budgets (budgets.py)
        self._oom_kills = 0  # seen before a restart (the agent's phase ends with one)

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        import docker
        import docker.errors

        try:
            if self.options.docker_host:
                self.client = docker.DockerClient(
                    base_url=self.options.docker_host, version="auto", timeout=int(self.config.startup_timeout)
                )
            else:
                self.client = docker.from_env(version="auto", timeout=int(self.config.startup_timeout))
        except docker.errors.DockerException as e:
            raise SandboxError(
                f"cannot reach the Docker engine ({os.environ.get('DOCKER_HOST', 'default socket')}): {e}"
            ) from None
        from mimo_core.environments.docker.images import ensure_image

        self.image = ensure_image(
            self.client,
            self.spec.image,
            self.spec.dockerfile_dir,
            self.spec.build_timeout or self.config.startup_timeout,
            self.options.fallback_image,
            image_prefix=self.config.image_prefix,
        )
        try:
            self.container = create_container(
                self.client, self.image, self.spec, self.options, ca_bundle=self._ca_bundle() is not None
            )
            live.track(self)
            self.container.start()
            self._watch = BudgetWatch(self.container.name, self._budget_check, self._end_for_budget)
            self._watch.start()
        except docker.errors.APIError as e:
            raise SandboxError(f"container from {self.image} failed to start: {e.explanation or e}") from None
        self._prepare()
        ca = self._ca_bundle()
        if ca is not None:
            self.write_file(HOST_CA_BUNDLE, Path(ca).read_bytes(), mode=0o644)
        self.mark_system_baseline()

    # -- budgets (budgets.py): docker's OOM record and the cgroup's kill count, the writable layer's size --

    def _budget_check(self) -> Exceeded | None:
        container = self.container
        if container is None:
            return None
        api = self.client.api  # (the SDK's inspect_container cannot ask for the writable layer's size)
        info = api._result(
            api._get(api._url("/containers/{0}/json", container.id), params={"size": 1 if self.spec.storage_mb else 0}),
            True,
        )
        kills = self._oom_kills
        if info.get("State", {}).get("Running"):
            kills += self._cgroup_oom_kills()
        elif info.get("State", {}).get("OOMKilled"):
            kills = max(kills, 1)
        return memory_exceeded(self.spec.memory_mb, kills) or disk_exceeded(
            self.spec.storage_mb, int(info.get("SizeRw") or 0)
        )

    def _cgroup_oom_kills(self) -> int:
        try:
            _, out, _ = self.exec_bytes(
                "cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null", timeout=30
            )
        except SandboxError:
            return 0
        for line in out.decode(errors="replace").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def _end_for_budget(self) -> None:
        container = self.container
        if container is not None:
            container.kill()  # PID 1 and every process with it: the agent's next command fails

    def budget_exceeded(self) -> Exceeded | None:
        """The budget this rollout's container went past (it was ended for it), or None."""
        return self._watch.check_now() if self._watch is not None else None

    def _ca_bundle(self) -> str | None:
        """The host's CA bundle to give a task with network (so its HTTPS through a proxy works), or None."""
        ca = HOST_CA_BUNDLE if self.options.ca_bundle == "auto" else self.options.ca_bundle
        return ca if self.spec.network and ca != "none" and os.path.isfile(ca) else None

    def stop(self) -> None:
        """Remove the container (forcefully: PID 1 ignores polite signals). Idempotent."""
        self._close_sessions()
        if self._watch is not None:
            self._watch.stop()
        container, self.container = self.container, None
        if container is not None:
            remove(container.id, self.client)
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

    def _where(self) -> str:
        return f"container {self.container.name if self.container is not None else '(none)'}"

    def exec_bytes(self, script: str, stdin: bytes = b"", timeout: float = 300.0) -> tuple[int, bytes, str]:
        """(exit code, stdout+stderr, "") of `sh -c script`; `stdin` is not supported here (no caller needs it)."""
        if stdin:
            raise ValueError("DockerEnvironment.exec_bytes takes no stdin")
        import docker.errors

        container = self._require()
        try:  # as root: the framework's own control (kills, output files), whatever user the task runs as
            res = container.exec_run(["sh", "-c", script], environment={"MIMO_KILLER": "1"}, user="0")
        except docker.errors.APIError as e:  # the container died (OOM of PID 1, removed from outside)
            raise SandboxError(f"container {container.name} cannot run commands: {e.explanation or e}") from None
        return int(res.exit_code if res.exit_code is not None else 1), res.output or b"", ""

    def _end_agent(self) -> int:
        """Restart the container: PID 1 dies and the kernel takes every process of its PID namespace with
        it, whatever they did (setsid, double forks, a new name). The files stay; PID 1 starts again."""
        import docker.errors

        container = self._require()
        alive = self.count_processes()
        if self._watch is not None and self._watch.check_now() is None:  # the kill count dies with PID 1
            self._oom_kills += self._cgroup_oom_kills()
        try:
            container.kill()
            container.wait(timeout=int(self.config.startup_timeout))
            container.start()
        except (docker.errors.APIError, docker.errors.DockerException) as e:
            raise SandboxError(
                f"container {container.name} could not be restarted to end the agent's "
                f"processes: {getattr(e, 'explanation', None) or e}"
            ) from None
        return alive

    def execute(
        self,
        command: str,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        container = self._require()
        timeout = self.spec.timeout if timeout is None else timeout
        marker = secrets.token_hex(8)
        out = f"{self.scratch_dir}/out.{marker}"
        wrapper = f"mkdir -p {shlex.quote(self.scratch_dir)} 2>/dev/null; {capture_script(shlex.quote(command), out)}"
        api = self.client.api
        start = time.monotonic()
        import docker.errors

        try:
            exec_id = api.exec_create(
                container.id,
                ["bash", "-c", wrapper],
                stdout=True,
                stderr=True,
                environment={**(env or {}), EXEC_MARKER: marker},
                workdir=self._workdir(cwd),
            )["Id"]
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
                    deadline = time.monotonic() + KILL_GRACE
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
            output += self.read_output(out).decode("utf-8", errors="replace")  # killed: never printed
            returncode = -9
        else:
            code = api.exec_inspect(exec_id).get("ExitCode")
            returncode = 1 if code is None else int(code)
        return ExecResult(
            output=output, returncode=returncode, timed_out=timed_out, duration_s=time.monotonic() - start
        )

    # -- a pristine system for grading (container/system_files.py) ----------------------------------

    def _reference(self) -> Any:
        """A container of the same image, never touched, without network; removed on exit."""
        return reference_container(self.client, self.image, self.spec)

    def _extract_root(self, archive: bytes) -> None:
        self._put("/", archive)

    # -- persistent shells (the ShellHost side of shell.py) -----------------------------------------

    def open_shell_stream(self, cwd: str) -> ShellStream:
        return open_shell(self, cwd)

    # -- files -------------------------------------------------------------------------------------
