"""Offline payloads: one self-contained archive per (CLI, version), runtime included, installable with
no network at all (`agent.payload_path` / `agent.payload_url`). Built by `mimoagent payload build`."""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import tempfile
import urllib.request
import uuid
from pathlib import Path

from mimo_core.agents.blackbox import install
from mimo_core.agents.blackbox.spec import CliSpec
from mimo_core.errors import ConfigError, SandboxError


def archive_name(spec: CliSpec, version: str) -> str:
    return f"{spec.name}-{version}-linux-{install.node_arch()}.tar.gz"


def build(spec: CliSpec, version: str, install_env: dict[str, str], out_dir: Path, log=print) -> Path:
    """Install from the registry (or reuse the cache), then pack the install folder into out_dir."""
    folder = install.ensure_installed(spec, version, install_env, log)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / archive_name(spec, version)
    tmp = target.with_name(target.name + ".part")
    top = f"{spec.name}-{version}"
    with tarfile.open(tmp, "w:gz", compresslevel=1) as tar:  # the manifest first: unpack checks it at once
        tar.add(folder, arcname=top, recursive=False)
        tar.add(folder / "manifest.json", arcname=f"{top}/manifest.json")
        for child in sorted(folder.iterdir()):
            if child.name != "manifest.json":
                tar.add(child, arcname=f"{top}/{child.name}")
    tmp.rename(target)
    return target


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()[:16]


def download(url: str, log=print) -> Path:
    """payload_url: fetched once into the cache (http, https or file URLs)."""
    dest = install.cache_root() / "downloads" / (hashlib.sha256(url.encode()).hexdigest()[:16] + ".tar.gz")
    if dest.exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    log(f"downloading payload {url}")
    tmp = dest.with_name(f"{dest.name}.{uuid.uuid4().hex}.part")
    try:
        with urllib.request.urlopen(url, timeout=600) as resp, open(tmp, "wb") as out:
            shutil.copyfileobj(resp, out)
    except (OSError, ValueError) as e:
        tmp.unlink(missing_ok=True)
        raise SandboxError(f"agent.payload_url: cannot download {url}: {e}") from None
    tmp.rename(dest)
    return dest


def unpack(archive: Path, spec: CliSpec, version: str) -> Path:
    """The install folder held by `archive`, unpacked once into the cache and checked against the config."""
    where = f"agent.payload_path {archive}"
    if not archive.is_file():
        raise ConfigError(f"{where}: no such file")
    dest = install.cache_root() / "cli" / spec.name / f"payload-{_sha(archive)}"
    if install.installed(dest) is None:
        early = _leading_manifest(archive)
        if early is not None:  # a payload for another CLI or version is refused before unpacking it
            _check(early, spec, version, where)
        with install.locked(dest):
            if install.installed(dest) is None:
                _extract(archive, dest, where)
    manifest = install.installed(dest)
    if manifest is None:
        raise ConfigError(f"{where}: broken payload (no manifest.json)")
    _check(manifest, spec, version, where)
    return dest


def _leading_manifest(archive: Path) -> install.Manifest | None:
    """The manifest when it is among the archive's first entries (as `build` writes it), else None."""
    try:
        with tarfile.open(archive, "r|*") as tar:
            for _, member in zip(range(3), tar, strict=False):
                if member.isfile() and member.name.endswith("/manifest.json"):
                    fh = tar.extractfile(member)
                    return install.Manifest.model_validate_json(fh.read()) if fh else None
    except (tarfile.TarError, EOFError, OSError, ValueError):
        return None  # _extract reports a broken archive
    return None


def _check(manifest: install.Manifest, spec: CliSpec, version: str, where: str) -> None:
    if manifest.cli != spec.name or manifest.version != version:
        raise ConfigError(
            f"{where}: holds {manifest.cli} {manifest.version}, the config asks for {spec.name} {version}"
        )
    if manifest.arch != install.node_arch():
        raise ConfigError(f"{where}: built for {manifest.arch}, this host is {install.node_arch()}")


def _extract(archive: Path, dest: Path, where: str) -> None:
    work = Path(tempfile.mkdtemp(prefix=".payload.", dir=dest.parent))
    try:
        with tarfile.open(archive, "r:*") as tar:
            tar.extractall(work, filter="tar")
        tops = list(work.iterdir())
        if len(tops) != 1 or not (tops[0] / "manifest.json").is_file():
            raise ConfigError(f"{where}: broken payload (expected one folder with manifest.json)")
        tops[0].rename(dest)
    except (tarfile.TarError, EOFError, OSError) as e:
        raise ConfigError(f"{where}: broken payload ({type(e).__name__}: {e})") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
