"""Pinned installs of CLI agents into a per-version cache folder, shared by every rollout on this host.

An install is a self-contained folder (the same folder a payload archive holds):

    <cache>/cli/<name>/<version>/
      manifest.json           what it is: CLI, package, version, runtime
      bin/<name>              launcher: runs the CLI with the bundled runtime; relocatable
      node_modules/ ...       npm CLIs, with `runtime/bin/node` from the npm registry's node-linux-<arch>
      venv/ ...               PyPI CLIs, for this host's Python
    <cache>/cli/<name>/<version>-cp<XY>/site/   PyPI CLIs for a sandbox's own python3 X.Y (containers):
                                                wheels only, run with PYTHONPATH=site

It is built in a side folder and renamed into place, under a lock, so concurrent rollouts install once
and a killed install never leaves a half folder that looks finished. Sandboxes that share the host's
files (local) run it in place; others get it copied in (see placement.py).
"""

from __future__ import annotations

import fcntl
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

from mimo_core.agents.blackbox.spec import CliSpec
from mimo_core.errors import ConfigError, SandboxError

NODE_VERSION = "22.23.5"  # the runtime npm CLIs get (several need node >= 22); from the npm registry
INSTALL_TIMEOUT = 900.0
# install_env keys understood for every ecosystem, mapped to what each installer reads.
_MIRROR_VARS = {
    "NPM_REGISTRY": ("npm_config_registry",),
    "PIP_INDEX_URL": ("PIP_INDEX_URL", "UV_INDEX_URL", "UV_DEFAULT_INDEX"),
    "PIP_EXTRA_INDEX_URL": ("PIP_EXTRA_INDEX_URL", "UV_EXTRA_INDEX_URL"),
}


class Manifest(BaseModel):
    cli: str
    package: str
    version: str
    ecosystem: str
    runtime: str | None = None  # "node-22.23.5" when a node runtime is bundled
    arch: str


def cache_root() -> Path:
    from mimo_core.settings import CoreSettings

    return Path(CoreSettings.read().cache_dir or Path.home() / ".cache" / "mimoagent")


def node_arch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)


def resolve_version(spec: CliSpec, version: str | None, allow_latest: bool) -> str:
    """The pinned version to install: the config's, else the adapter's default; `latest` only if allowed."""
    version = (version or spec.default_version).strip()
    if version == "latest" and not allow_latest:
        raise ConfigError(
            f"agent.version: 'latest' is refused for {spec.name} (runs would not be reproducible); "
            f"pin a version (default {spec.default_version}) or set agent.allow_latest: true"
        )
    if not version or any(c.isspace() or c in "/\\;&|$`'\"<>" for c in version):
        raise ConfigError(f"agent.version: {version!r} is not a version of {spec.package}")
    return version


def installer_env(install_env: dict[str, str]) -> dict[str, str]:
    """The installer's environment: ours, plus the config's mirror settings under the names each tool reads."""
    env = dict(os.environ)
    for key, value in install_env.items():
        env[key] = value
        for name in _MIRROR_VARS.get(key, ()):
            env[name] = value
    return env


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `<path>.lock`: one process builds `path`, concurrent ones wait for it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def installed(dest: Path) -> Manifest | None:
    try:
        return Manifest.model_validate_json((dest / "manifest.json").read_text())
    except (OSError, ValueError):
        return None


def ensure_installed(
    spec: CliSpec, version: str, install_env: dict[str, str], log=print, python: str | None = None
) -> Path:
    """The cache folder of `spec` at `version`, installing it from its registry the first time. `python`
    ("3.11"): a PyPI CLI for that Python of a sandbox rather than for this host's (a venv)."""
    if version == "latest":
        version = latest_version(spec, install_env)
    dest = cache_root() / "cli" / spec.name / (f"{version}-cp{python.replace('.', '')}" if python else version)
    if installed(dest):
        return dest
    with locked(dest):
        if installed(dest):
            return dest
        log(f"installing {spec.package}@{version} into {dest}")
        work = Path(tempfile.mkdtemp(prefix=f".{version}.", dir=dest.parent))
        try:
            if spec.ecosystem == "npm":
                _install_npm(spec, version, work, installer_env(install_env))
            elif python:
                _install_pypi_for(spec, version, work, installer_env(install_env), python)
            else:
                _install_pypi(spec, version, work, installer_env(install_env))
            spec.after_install(work)
            write_launcher(spec, work)
            manifest = Manifest(
                cli=spec.name,
                package=spec.package,
                version=version,
                ecosystem=spec.ecosystem,
                runtime=f"node-{NODE_VERSION}" if spec.needs_node else (python and f"python{python}"),
                arch=node_arch(),
            )
            (work / "manifest.json").write_text(manifest.model_dump_json(indent=1))
            os.rename(work, dest)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return dest


def latest_version(spec: CliSpec, install_env: dict[str, str]) -> str:
    if spec.ecosystem != "npm":
        raise ConfigError(f"agent.version: 'latest' is only resolved for npm CLIs; pin {spec.name}'s version")
    out = _run(["npm", "view", spec.package, "version"], installer_env(install_env), spec, "latest", 120)
    return out.strip().splitlines()[-1].strip().strip("'")


def _run(argv: list[str], env: dict[str, str], spec: CliSpec, version: str, timeout: float = INSTALL_TIMEOUT) -> str:
    if shutil.which(argv[0]) is None:
        raise SandboxError(f"installing {spec.package}@{version} needs `{argv[0]}` on this host; it is not on PATH")
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise SandboxError(
            f"installing {spec.package}@{version}: `{' '.join(argv[:2])}` timed out after {timeout:.0f}s"
        ) from None
    if proc.returncode != 0:
        text = proc.stderr + proc.stdout
        reason = _reason(text)
        if any(
            s in text
            for s in (
                "ETARGET",
                "notarget",
                "No matching version",
                "No solution found",
                "E404",
                "404 Not Found",
                "not found in the package registry",
            )
        ):
            raise ConfigError(f"agent.version: {spec.package}@{version} does not exist on the registry ({reason})")
        raise SandboxError(f"installing {spec.package}@{version} failed: {reason}")
    return proc.stdout


def _reason(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "npm error A complete log" not in ln]
    errs = [ln for ln in lines if "error" in ln.lower()]
    return " / ".join((errs or lines)[:3])[:400] or "no output"


def _install_npm(spec: CliSpec, version: str, work: Path, env: dict[str, str]) -> None:
    targets = [f"{spec.package}@{version}"]
    if spec.needs_node:
        targets.append(f"node-linux-{node_arch()}@{NODE_VERSION}")
    env = {
        **env,
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
        "npm_config_cache": str(cache_root() / "npm-cache"),
    }
    _run(
        [
            "npm",
            "install",
            "--prefix",
            str(work),
            "--no-save",
            "--no-package-lock",
            "--omit=dev",
            "--loglevel=error",
            *targets,
        ],
        env,
        spec,
        version,
    )
    if not (work / "node_modules" / spec.package).is_dir():
        raise SandboxError(f"installing {spec.package}@{version}: npm finished but the package is missing")


def _install_pypi(spec: CliSpec, version: str, work: Path, env: dict[str, str]) -> None:
    uv = shutil.which("uv")
    venv = work / "venv"
    if uv:
        _run([uv, "venv", "--relocatable", "--python", sys.executable, str(venv)], env, spec, version)
        _run(
            [uv, "pip", "install", "--python", str(venv / "bin" / "python"), f"{spec.package}=={version}"],
            env,
            spec,
            version,
        )
    else:
        _run([sys.executable, "-m", "venv", str(venv)], env, spec, version)
        _run([str(venv / "bin" / "python"), "-m", "pip", "install", f"{spec.package}=={version}"], env, spec, version)


def _install_pypi_for(spec: CliSpec, version: str, work: Path, env: dict[str, str], python: str) -> None:
    """Wheels for another machine's CPython `python` (linux, glibc >= 2.28) into work/site, bytecode
    compiled here (the sandbox sees the folder read-only)."""
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())
    target = f"{spec.package}=={version}"
    if shutil.which("uv"):
        argv = [
            "uv",
            "pip",
            "install",
            "--target",
            str(work / "site"),
            "--python-version",
            python,
            "--python-platform",
            f"{machine}-manylinux_2_28",
            "--no-build",
            "--compile-bytecode",
            target,
        ]
    else:
        argv = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--target",
            str(work / "site"),
            "--python-version",
            python,
            "--platform",
            f"manylinux_2_28_{machine}",
            "--implementation",
            "cp",
            "--only-binary=:all:",
            target,
        ]
    try:
        _run(argv, env, spec, version)
    except ConfigError as e:  # the resolver's "no solution" also means "no wheels for that Python"
        raise ConfigError(
            f"{spec.package}@{version} cannot be installed for the sandbox's Python {python} "
            f"(no such version, or no {machine} wheels for it): {e}"
        ) from None


def write_launcher(spec: CliSpec, folder: Path) -> None:
    """bin/<name>: finds its own folder at run time, so the install works wherever it is copied."""
    (folder / "bin").mkdir(exist_ok=True)
    body = spec.launcher_body(f'"$D/node_modules/node-linux-{node_arch()}/bin/node"')
    launcher = folder / "bin" / spec.name
    launcher.write_text('#!/bin/sh\nD="$(cd "$(dirname "$0")/.." && pwd)"\n' + body + "\n")
    launcher.chmod(0o755)
