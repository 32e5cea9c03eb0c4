"""Where a CLI install comes from (registry, payload file, payload URL) and how a sandbox gets it.

Local sandboxes share the host's files, so they run the cached install in place (bubblewrap binds the
host read-only). Other backends get the install folder copied in, once per sandbox, under /opt.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from mimo_core.agents.cli import install, payload
from mimo_core.agents.cli.spec import CliSpec
from mimo_core.config import AgentConfig
from mimo_core.environments.base import Environment
from mimo_core.errors import ConfigError, SandboxError

IN_SANDBOX_ROOT = "/opt/mimoagent-cli"


def obtain(spec: CliSpec, version: str, cfg: AgentConfig, log: Callable[[str], None]) -> Path:
    """The host folder holding `spec` at `version`: from the payload when one is configured, else the
    registry (through the config's mirrors), cached per version either way."""
    if cfg.payload_path:
        return payload.unpack(Path(cfg.payload_path).expanduser(), spec, version)
    if cfg.payload_url:
        return payload.unpack(payload.download(cfg.payload_url, log), spec, version)
    return install.ensure_installed(spec, version, cfg.install_env, log)


def shares_host_files(env: Environment) -> bool:
    from mimo_core.environments.local import LocalEnvironment

    return isinstance(env, LocalEnvironment)


def place(env: Environment, host_dir: Path, spec: CliSpec, version: str) -> str:
    """The install's path as the sandbox sees it."""
    if shares_host_files(env):
        return str(host_dir)
    if spec.ecosystem == "pypi":
        raise ConfigError(f"agent.type {spec.name}: its install is a virtualenv of this host's Python, which a "
                          "container does not have; run it with environment_class: local")
    target = f"{IN_SANDBOX_ROOT}/{spec.name}-{version}"
    if env.execute(f"test -x {shlex.quote(target)}/bin/{spec.name}", timeout=60).returncode == 0:
        return target
    env.execute(f"mkdir -p {shlex.quote(target)}", timeout=60)
    env.copy_in(host_dir, target)
    check = env.execute(f"{shlex.quote(target)}/bin/{spec.name} --version", timeout=120)
    if check.returncode != 0:
        raise SandboxError(f"{spec.package}@{version} does not start in the sandbox: {check.output.strip()[-300:]}")
    return target


def proxy_address(env: Environment, cli: str) -> tuple[str, str]:
    """(host the sandbox dials, address the proxy binds). A container on a bridge network reaches the
    host at its gateway; with the host's network, at 127.0.0.1; with no network, not at all."""
    container = getattr(env, "container", None)
    if shares_host_files(env) or container is None:
        return "127.0.0.1", "127.0.0.1"
    container.reload()
    mode = (container.attrs.get("HostConfig") or {}).get("NetworkMode") or ""
    if mode == "host":
        return "127.0.0.1", "127.0.0.1"
    networks = (container.attrs.get("NetworkSettings") or {}).get("Networks") or {}
    gateways = [n.get("Gateway") for n in networks.values() if n.get("Gateway")]
    if mode == "none" or not gateways:
        raise SandboxError(f"agent.type {cli}: the container has no network (mode {mode or 'none'}), so the CLI "
                           "cannot reach the model through the recording proxy; give the task network access")
    return gateways[0], gateways[0]
