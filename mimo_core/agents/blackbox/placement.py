"""Where a CLI install comes from (registry, payload file, payload URL) and how a sandbox gets it.

A local sandbox without bwrap shares the host's files, so it runs the cached install in place. Sandboxes
that do not (bwrap's allow-list, containers) get the host's install cache bound read-only
(`cache_mount`, asked for when the sandbox is created), so every sandbox of every run uses the one
install in place; where the mount is not there (a remote engine, a backend without mounts) the install
is copied in, once per sandbox.
"""

from __future__ import annotations

import shlex
import tarfile
from collections.abc import Callable
from pathlib import Path

from mimo_core.agents.blackbox import install, payload
from mimo_core.agents.blackbox.spec import CliSpec
from mimo_core.config import AgentConfig
from mimo_core.environments.base import Environment
from mimo_core.errors import ConfigError, SandboxError

IN_SANDBOX_ROOT = "/opt/mimoagent-cli"
MOUNTED_CACHE = "/opt/mimoagent-cli-cache"  # the host's <cache>/cli, read-only, where mounted


def cache_mount() -> dict[str, str]:
    """The host folder of every CLI install (created now, filled later: a bind mount shows it live)."""
    root = install.cache_root() / "cli"
    root.mkdir(parents=True, exist_ok=True)
    return {str(root): MOUNTED_CACHE}


def obtain(spec: CliSpec, version: str, cfg: AgentConfig, log: Callable[[str], None], env: Environment) -> Path:
    """The host folder holding `spec` at `version`: from the payload when one is configured, else the
    registry (through the config's mirrors), cached per version either way. A PyPI CLI for a container is
    installed for the container's python3 (cached per version and Python version)."""
    if spec.ecosystem == "pypi" and not shares_host_files(env):
        if cfg.payload_path or cfg.payload_url:
            raise ConfigError(
                f"agent.payload_path/payload_url: a {spec.name} payload is a virtualenv of this "
                "host's Python; a container installs it from the registry (agent.install_env)"
            )
        return install.ensure_installed(spec, version, cfg.install_env, log, python=sandbox_python(env, spec))
    if cfg.payload_path:
        return payload.unpack(Path(cfg.payload_path).expanduser(), spec, version)
    if cfg.payload_url:
        return payload.unpack(payload.download(cfg.payload_url, log), spec, version)
    return install.ensure_installed(spec, version, cfg.install_env, log)


def sandbox_python(env: Environment, spec: CliSpec) -> str:
    """The X.Y of the sandbox's python3, which a PyPI CLI runs on there."""
    probe = env.execute("python3 -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])'", timeout=60)
    version = probe.output.strip().splitlines()[-1:] if probe.returncode == 0 else []
    if not version or not version[0].replace(".", "").isdigit():
        raise ConfigError(
            f"agent.type {spec.name} needs python3 (>= 3.10) in the sandbox's image, and "
            f"{env.spec.image or 'the image'} has none: {probe.output.strip()[-200:] or 'not found'}"
        )
    return version[0]


def shares_host_files(env: Environment) -> bool:
    """The sandbox sees the host's files (local without bwrap): the cached install runs in place."""
    from mimo_core.environments.registry import capabilities

    config = getattr(env, "config", None)
    return config is not None and capabilities(config).host_files


def place(env: Environment, host_dir: Path, spec: CliSpec, version: str) -> str:
    """The install's path as the sandbox sees it."""
    if shares_host_files(env):
        return str(host_dir)
    target = _mounted(env, host_dir, spec) or f"{IN_SANDBOX_ROOT}/{spec.name}-{version}"
    if env.execute(f"test -x {shlex.quote(target)}/bin/{spec.name}", timeout=60).returncode != 0:
        _copy_in(env, host_dir, target, spec, version)
    check = env.execute(f"{shlex.quote(target)}/bin/{spec.name} {spec.check_args} </dev/null", timeout=120)
    if check.returncode != 0:
        raise SandboxError(f"{spec.package}@{version} does not start in the sandbox: {check.output.strip()[-300:]}")
    return target


def _mounted(env: Environment, host_dir: Path, spec: CliSpec) -> str | None:
    """The install's path under the mounted host cache, when the sandbox has that mount and sees it."""
    root = install.cache_root() / "cli"
    if env.spec.mounts.get(str(root)) != MOUNTED_CACHE or not host_dir.is_relative_to(root):
        return None
    path = f"{MOUNTED_CACHE}/{host_dir.relative_to(root).as_posix()}"
    seen = env.execute(f"test -x {shlex.quote(path)}/bin/{spec.name}", timeout=60).returncode == 0
    return path if seen else None  # a remote engine mounts its own (empty) folder of that name


def _copy_in(env: Environment, host_dir: Path, target: str, spec: CliSpec, version: str) -> None:
    env.execute(f"mkdir -p {shlex.quote(target)}", timeout=60)
    container = getattr(env, "container", None)
    if container is None or not hasattr(container, "put_archive"):
        env.copy_in(host_dir, target)
        return
    with open(_archive_of(host_dir), "rb") as fh:  # streamed from a file: not the whole install in memory
        if not container.put_archive(target, fh):
            raise SandboxError(f"copying {spec.package}@{version} into the container failed")


def _archive_of(host_dir: Path) -> Path:
    """An uncompressed tar of the install's contents beside it, made once (containers unpack it); a
    name that no version and no payload folder can take."""
    tar_path = host_dir.with_name(host_dir.name + ".contents.tar")
    if tar_path.exists():
        return tar_path
    with install.locked(tar_path):
        if not tar_path.exists():
            part = tar_path.with_name(tar_path.name + ".part")
            with tarfile.open(part, "w") as tar:
                for child in sorted(host_dir.iterdir()):
                    tar.add(str(child), arcname=child.name)
            part.rename(tar_path)
    return tar_path


def proxy_address(env: Environment, cli: str) -> tuple[str, str]:
    """(host the sandbox dials, address the proxy binds). A container on a bridge network reaches the
    host at its gateway; with the host's network, at 127.0.0.1; with no network, not at all."""
    container = getattr(env, "container", None)
    if shares_host_files(env) or getattr(env, "listen_inside", None) is not None:  # (bwrap: the proxy
        return "127.0.0.1", "127.0.0.1"  # listens on the sandbox's own loopback, see listen_inside)
    if container is None:  # e.g. a kubernetes pod: the runner's loopback is not reachable from it
        raise SandboxError(
            f"agent.type {cli}: the {type(env).__name__} sandbox has no route to the recording "
            "proxy on this host; CLI agents run on the local and docker backends"
        )
    container.reload()
    mode = (container.attrs.get("HostConfig") or {}).get("NetworkMode") or ""
    if mode == "host":
        return "127.0.0.1", "127.0.0.1"
    networks = (container.attrs.get("NetworkSettings") or {}).get("Networks") or {}
    gateways = [n.get("Gateway") for n in networks.values() if n.get("Gateway")]
    if mode == "none" or not gateways:
        raise SandboxError(
            f"agent.type {cli}: the container has no network (mode {mode or 'none'}), so the CLI "
            "cannot reach the model through the recording proxy; give the task network access"
        )
    return gateways[0], gateways[0]
