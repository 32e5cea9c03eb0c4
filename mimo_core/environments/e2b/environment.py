"""The E2B-protocol backend: one E2B sandbox per rollout (or per separate verifier), through the official
`e2b` SDK. `environment_class: e2b` is E2B's service; `cube` is CubeSandbox, which serves the same API
(its own name: it has no public default URL, so `backend_kwargs.api_url` or `E2B_API_URL` must say where).

It follows the container backends seam for seam (container/base.py): commands carry a random marker and a
timeout kills every process carrying it, the bash tool's persistent shell is one envd process whose
stdin stays open (shell.py's protocol), files travel as tar over commands (e2b/files.py), grading kills
every process of the agent (sparing envd, which lives inside the sandbox) and puts the system back to a
fresh sandbox's. The sandbox's template comes from the row's image (options.py: a template per image,
built on the provider's side); an unknown template is the dataset's error, not the infrastructure's.

Sandboxes carry the rollout's labels and their runner's host and pid as E2B metadata; `stop()` kills the
sandbox, and the start-of-run sweep and `mimoagent cleanup` kill those of dead runners (e2b/cleanup.py).
Past `backend_kwargs.lifetime` seconds E2B ends a sandbox whatever happened to its runner.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import secrets
import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from pydantic import BaseModel

from mimo_core.environments import live
from mimo_core.environments.base import LABEL_INSTANCE, Capabilities, ExecResult, FileHead
from mimo_core.environments.container.base import EXEC_MARKER, KILL_GRACE, QUIET_ENV, ContainerEnvironment
from mimo_core.environments.e2b import commands, files
from mimo_core.environments.e2b.options import CubeOptions, E2BOptions, check_credentials, template_for
from mimo_core.environments.e2b.shell import E2BShellStream, open_shell
from mimo_core.environments.owners import owner_labels
from mimo_core.environments.shell import HeadTail
from mimo_core.errors import DatasetError, SandboxError

if TYPE_CHECKING:
    from mimo_core.config import EnvironmentConfig

log = logging.getLogger("mimoagent.e2b")


class E2BEnvironment(ContainerEnvironment):
    """One E2B sandbox per rollout, killed by `stop()` whatever happened."""

    options_model: ClassVar[type[BaseModel]] = E2BOptions
    backend_name = "e2b"

    @staticmethod
    def capabilities(config: EnvironmentConfig) -> Capabilities:
        return Capabilities(
            host_files=False, image_tasks=True, confined=True, network_isolation=True, host_mounts=False
        )

    @classmethod
    def sweep_stale(cls, configs: list[EnvironmentConfig]) -> None:
        """Before a run: the credentials are there (one line naming the variable if not), and sandboxes of
        dead runners of this host are killed."""
        from mimo_core.environments.e2b.cleanup import cleanup

        for config in configs:
            options = cast(E2BOptions, cls.options_model.model_validate(config.backend_kwargs))
            check_credentials(cls.backend_name, options)
            with contextlib.suppress(SandboxError):
                cleanup(stale_only=True, options=options, backend=cls.backend_name)

    def __init__(self, spec: Any, config: EnvironmentConfig, **_: Any) -> None:
        super().__init__(spec, config)
        self.sandbox: Any = None
        self.sandbox_id: str | None = None
        self.template: str | None = None

    def api_params(self) -> dict[str, Any]:
        o = self.options
        params = {"api_key": check_credentials(self.backend_name, o), "request_timeout": o.request_timeout}
        for key in ("api_url", "domain", "sandbox_url"):
            if getattr(o, key):
                params[key] = getattr(o, key)
        return params

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        from e2b import Sandbox

        params = self.api_params()
        self.template = template_for(self.spec.image, self.options)
        self.image = self.spec.image
        if not self.template:
            raise DatasetError(
                f"the task names no image and {self.backend_name} starts sandboxes from templates: set the "
                "row's image, or environment.backend_kwargs.fallback_template"
            )
        metadata = {**self.spec.labels, **owner_labels(), "mimoagent.sandbox": "e2b"}
        live.track(self)
        try:
            self.sandbox = Sandbox.create(
                template=self.template,
                timeout=self.options.lifetime,
                metadata=metadata,
                envs={**QUIET_ENV, **self.spec.env},
                allow_internet_access=self.spec.network,
                **params,
            )
        except Exception as e:
            raise self._create_error(e) from None
        self.sandbox_id = self.sandbox.sandbox_id
        self._prepare()
        self.mark_system_baseline()

    def _create_error(self, e: Exception) -> Exception:
        from e2b import AuthenticationException

        text = (str(e).splitlines() or [type(e).__name__])[0][:300]
        if isinstance(e, AuthenticationException):
            return SandboxError(f"{self.backend_name}: the API refused the key in E2B_API_KEY: {text}")
        if getattr(e, "status_code", None) == 404 or text.startswith("404"):
            return DatasetError(
                f"{self.backend_name}: template {self.template!r} (for image {self.spec.image!r}) does not exist: "
                f"{text}. Build it from the image first (docs/sandboxes.md, E2B and CubeSandbox)"
            )
        return commands.sdk_error(e, f"creating a sandbox from template {self.template!r}")

    def stop(self) -> None:
        """Kill the sandbox. Idempotent."""
        self._close_sessions()
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is not None:
            try:
                sandbox.kill()
            except Exception as e:  # a sandbox left behind is said: `mimoagent cleanup` (or its lifetime) ends it
                log.warning("killing e2b sandbox %s failed (%s)", self.sandbox_id, str(e).splitlines()[:1])
        live.untrack(self)

    # -- commands ----------------------------------------------------------------------------------

    def _require(self) -> Any:
        if self.sandbox is None:
            raise SandboxError(f"{type(self).__name__} used before start() or after stop()")
        return self.sandbox

    def _where(self) -> str:
        return f"{self.backend_name} sandbox {self.sandbox_id}"

    def exec_bytes(self, script: str, stdin: bytes = b"", timeout: float = 300.0) -> tuple[int, bytes, str]:
        return commands.exec_bytes(self, script, stdin, timeout)

    def execute(
        self,
        command: str,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        from mimo_core.environments.container.base import capture_script

        sandbox = self._require()
        timeout = self.spec.timeout if timeout is None else timeout
        marker = secrets.token_hex(8)
        out = f"{self.scratch_dir}/out.{marker}"
        script = (
            f"cd {shlex.quote(self._workdir(cwd))} 2>&1 || exit 1; mkdir -p {shlex.quote(self.scratch_dir)} "
            f"2>/dev/null; {capture_script(shlex.quote(command), out)}"
        )
        pairs = {**self.spec.env, **(env or {}), EXEC_MARKER: marker}
        argv = ["env", *(f"{k}={v}" for k, v in pairs.items()), "sh", "-c", script]
        kept = HeadTail()
        begin = time.monotonic()
        _, thread, done = commands.start(sandbox, argv, self.options.user, on_stdout=lambda s: kept.feed(s.encode()))
        timed_out = False
        try:
            code, error = done.get(timeout=timeout)
        except queue.Empty:
            timed_out = True
            self._kill(marker)
            try:
                code, error = done.get(timeout=KILL_GRACE)
            except queue.Empty:
                code, error = None, None
        if error is not None and not timed_out:
            self._require()
            raise commands.sdk_error(error, f"running a command in {self._where()}")
        output = kept.bytes().decode("utf-8", errors="replace")
        if timed_out:
            output += self.read_output(out).decode("utf-8", errors="replace")
        return ExecResult(
            output=output,
            returncode=-9 if timed_out else (code if code is not None else -1),
            timed_out=timed_out,
            duration_s=time.monotonic() - begin,
        )

    # -- grading: envd lives inside the sandbox, so no `kill -9 -1` ---------------------------------

    def interrupt(self) -> None:
        with contextlib.suppress(Exception):
            self._require()
            self.exec_bytes(commands.INTERRUPT_SCRIPT, timeout=30)

    def _kill_everything(self) -> int:
        code, raw, err = self.exec_bytes(commands.KILL_ALL_SCRIPT, timeout=120)
        out = raw.decode(errors="replace").split()
        if len(out) != 2 or not all(x.isdigit() for x in out):
            raise SandboxError(f"{self._where()}: could not kill the agent's processes (exit {code}): {err[:200]}")
        if out[1] != "0":
            raise SandboxError(f"{self._where()}: {out[1]} process(es) survived being killed")
        return int(out[0])

    def count_processes(self) -> int:
        code, raw, err = self.exec_bytes(commands.COUNT_SCRIPT, timeout=60)
        out = raw.decode(errors="replace").split()
        if not out or not out[-1].isdigit():
            raise SandboxError(f"{self._where()}: could not count the agent's processes (exit {code}): {err[:200]}")
        return int(out[-1])

    # -- a pristine system for grading (container/system_files.py) ----------------------------------

    @contextlib.contextmanager
    def _reference(self) -> Iterator[E2BEnvironment]:
        """A sandbox of the same template, never touched, without network; killed on exit."""
        labels = dict(self.spec.labels)
        labels[LABEL_INSTANCE] = f"{labels.get(LABEL_INSTANCE, 'task')}-reference"
        spec = self.spec.model_copy(update={"seed_dir": None, "network": False, "labels": labels}, deep=True)
        ref = type(self)(spec, self.config)
        try:
            ref.start()
            yield ref
        finally:
            ref.stop()

    def _extract_root(self, archive: bytes) -> None:
        rc, out, err = self.exec_bytes(f"head -c {len(archive)} | tar -xpf - -C /", archive, timeout=600)
        if rc != 0:
            raise SandboxError(f"{self._where()}: restoring the image's files failed (exit {rc}): {err[:200]}")

    # -- persistent shells and files ------------------------------------------------------------------

    def open_shell_stream(self, cwd: str) -> E2BShellStream:
        return open_shell(self, cwd)

    def read_file(self, path: str) -> bytes:
        return files.read_file(self, path)

    def read_head(self, path: str, max_bytes: int) -> FileHead:
        return files.read_head(self, path, max_bytes)

    def write_file(self, path: str, data: bytes, mode: int | None = None) -> None:
        files.write_file(self, path, data, mode)

    def copy_in(self, src: Path, dest: str) -> None:
        files.copy_in(self, Path(src), dest)

    def copy_out(self, src: str, dest: Path) -> None:
        files.copy_out(self, src, Path(dest))


class CubeEnvironment(E2BEnvironment):
    """CubeSandbox: the same protocol at your deployment's URL."""

    options_model = CubeOptions
    backend_name = "cube"
