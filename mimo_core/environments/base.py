"""The Environment seam. Every tool and every grader acts only through it, so each agent and dataset type
runs on every backend (local, docker, kubernetes, ...)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

# The labels every sandbox carries (SandboxSpec.labels): what cleanup and names are derived from.
LABEL_RUN_ID = "mimoagent.run_id"
LABEL_INSTANCE = "mimoagent.instance"
LABEL_CONFIG = "mimoagent.config"
LABEL_ROLLOUT = "mimoagent.rollout"


class SandboxSpec(BaseModel):
    """What one rollout's sandbox must look like, derived from the task row and the config."""

    image: str | None = None  # already prefixed with environment.image_prefix
    cwd: str = "/testbed"
    env: dict[str, str] = Field(default_factory=dict)
    timeout: float = 300.0  # default per-command timeout
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None  # disk the sandbox's own files may take (a watchdog ends it past that)
    pids_limit: int | None = None
    network: bool = True  # False: no network at all
    labels: dict[str, str] = Field(default_factory=dict)  # run id, instance, config: for cleanup
    dockerfile_dir: str | None = None  # build context used when `image` is absent or unavailable
    build_timeout: float | None = None  # seconds to build it (the task's own); None: environment.startup_timeout
    seed_dir: str | None = None  # host folder copied into `cwd` before setup (local repos)
    # Host folders shown read-only inside (host path -> sandbox path): shared installs such as the CLI
    # agents' cache. Backends that share the host's files, or cannot mount them, ignore it.
    mounts: dict[str, str] = Field(default_factory=dict)


class Capabilities(BaseModel):
    """What a backend can do with a given config: what callers ask instead of testing its name."""

    model_config = ConfigDict(frozen=True)

    host_files: bool  # the sandbox's files are this host's: host folders need no mount to be seen
    image_tasks: bool  # it starts a task's own image (docker image or Dockerfile)
    confined: bool  # commands cannot reach the host's files, processes, sockets or loopback
    network_isolation: bool  # a row without network gets none at all
    host_mounts: bool  # it can show host folders read-only inside (SandboxSpec.mounts)


REFUSED_TAG = "[refused by the sandbox]"  # in every refusal's message: what containment detection looks for


class SandboxRefusal(PermissionError):
    """A file method was asked for a path the sandbox does not expose (outside the rollout's folders or
    the system folders it shows). Tools show it to the model; the rollout records the attempt."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why} {REFUSED_TAG}")
        self.path = path
        self.why = why


class ExecResult(BaseModel):
    output: str  # stdout and stderr interleaved
    returncode: int
    timed_out: bool = False
    duration_s: float = 0.0


class Environment(Protocol):
    spec: SandboxSpec
    scratch_dir: str  # a framework-owned folder inside the sandbox, outside `cwd`

    def start(self) -> None: ...

    def execute(
        self,
        command: str,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        """Run `command` with bash (not a login shell). A timeout kills it; the sandbox keeps working."""
        ...

    def read_file(self, path: str) -> bytes: ...

    def write_file(self, path: str, data: bytes, mode: int | None = None) -> None:
        """Create parent folders; `mode=None` keeps an existing file's mode (new files: 0644)."""
        ...

    def copy_in(self, src: Path, dest: str) -> None:
        """Copy a host file or folder to `dest` in the sandbox (folders: their contents into `dest`)."""
        ...

    def copy_out(self, src: str, dest: Path) -> None: ...

    def stop(self) -> None:
        """Release everything. Idempotent; safe after a failed start."""
        ...


class FileHead(BaseModel):
    """At most `max_bytes` of a file (`read_head`): its first bytes, its size, and whether more followed."""

    data: bytes
    size: int | None  # the file's size in bytes; None where it has none (a device such as /dev/zero)
    truncated: bool  # the file holds more than `data`


class BoundedReads(Protocol):
    """Optional, on top of `Environment`: a read of at most `max_bytes` that never loads the whole file
    (local: `head -c` in the sandbox or a capped read; docker: a capped archive stream; kubernetes: `head
    -c` over exec). Every read of agent-made data goes through `read_head` below."""

    def read_head(self, path: str, max_bytes: int) -> FileHead: ...


def read_head(env: Environment, path: str, max_bytes: int) -> FileHead:
    """The first `max_bytes` of `path` in the sandbox. A backend without `read_head` of its own (a custom
    `module:Class`) is read through `execute`: `head -c` piped to base64, in pieces small enough for
    any backend's output cap, never the whole file."""
    method = getattr(env, "read_head", None)
    if method is not None:
        return method(path, max_bytes)
    import base64
    import errno
    import shlex

    q = shlex.quote(path)
    res = env.execute(
        f"[ -e {q} ] || exit 44; [ -d {q} ] && exit 45; if [ -f {q} ]; then stat -L -c %s -- {q}; "
        f"elif [ -c {q} ]; then echo -; else echo 'not a regular file'; exit 46; fi"
    )
    if res.returncode == 44:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
    if res.returncode == 45:
        raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
    word = (res.output.strip().splitlines() or [""])[-1].strip()
    if res.returncode != 0:
        raise OSError(errno.EIO, f"reading failed in the sandbox: {word[-300:]}", path)
    size = int(word) if word.isdigit() else None
    data, want, piece = bytearray(), max_bytes + 1, 3 << 20  # base64 of a piece: 4 MiB, under every cap
    while len(data) < want:
        n = min(piece, want - len(data))
        out = env.execute(f"command -p tail -c +{len(data) + 1} -- {q} | command -p head -c {n} | base64 -w0")
        got = base64.b64decode(out.output.strip() or b"")
        data += got
        if len(got) < n:
            break
    return FileHead(data=bytes(data[:max_bytes]), size=size, truncated=len(data) > max_bytes)


class GradingSeam(Protocol):
    """Optional, on top of `Environment`: what keeps a hostile agent away from its own grade.

    `begin_grading` ends the agent's phase: every process it (or anything it started) left is killed,
    and `scratch_dir` is a new folder the agent never had a handle on, so verifier files, reward files
    and the collected patch live where no process of the agent could write. `end_processes` kills
    whatever is running now (after the verifier, before its reward is read). `read_only_view` is a
    sandbox over the same final state where nothing can be written (for a judge), or None.
    """

    def begin_grading(self) -> int:
        """Kill every process of the agent; fresh scratch. Returns how many processes were still alive."""
        ...

    def end_processes(self) -> int:
        """Kill every process now running in the sandbox; how many there were."""
        ...

    def read_only_view(self) -> Environment | None: ...


class PersistentShells(Protocol):
    """Optional, on top of `Environment`: what a backend offers for the bash tool's long-lived shells.

    The protocol itself is backend-neutral (shell.py's `ShellSession`); a backend (local, bwrap, docker,
    and the same way Kubernetes' exec websocket) provides `open_shell_stream`, `kill_call`, `read_output`
    and `inline_output` (see shell.py's `ShellHost`) and keeps one session per name. Backends without it
    get the bash tool's emulation over `execute`.
    """

    def shell(self, name: str = "main") -> Any:
        """The rollout's persistent shell called `name` (a `ShellSession`), started on first use."""
        ...

    def interrupt(self) -> None:
        """Kill every running command of the sandbox now; callable from any thread (a stopping runner)."""
        ...
