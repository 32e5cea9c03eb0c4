"""Build the code-location image from deploy/Dockerfile with the test dockerd, for real.

Nothing can be pulled, so the build starts FROM the locally made base image (BASE_IMAGE build arg) and
installs Python, uv and the locked dependencies from Debian and PyPI inside. The context is the
repository's own files (tracked and new, not ignored), plus the host's CA bundle as
deploy/certs/ca-bundle.crt when this machine reaches PyPI through a TLS-intercepting proxy. The engine's
layer cache keeps the dependency layer (keyed by docker on pyproject.toml + uv.lock) between runs on the
same machine, so only the first build after a lockfile change downloads anything; the project layers are
rebuilt each time and take seconds.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel

from testkit.dockerd import BASE_IMAGE

TAG = "mimo-deploy:test"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


class BuiltImage(BaseModel):
    tag: str
    seconds: float
    log_tail: str


def _context(repo: Path, into: Path) -> None:
    files = (
        subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=repo,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, files):
        src = repo / rel
        if src.is_file():
            (into / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, into / rel)
    if HOST_CA_BUNDLE.is_file():
        (into / "deploy" / "certs").mkdir(parents=True, exist_ok=True)
        shutil.copy(HOST_CA_BUNDLE, into / "deploy" / "certs" / "ca-bundle.crt")


def build(docker_host: str, repo: Path, tag: str = TAG, timeout: int = 1800) -> BuiltImage:
    import docker
    import docker.errors

    start = time.monotonic()
    client = docker.DockerClient(base_url=docker_host, version="auto", timeout=timeout)
    log: list[str] = []
    try:
        old = client.images.get(tag).id
    except docker.errors.ImageNotFound:
        old = None
    try:
        with tempfile.TemporaryDirectory(prefix="mimo-deploy-ctx-", dir="/var/tmp") as tmp:
            _context(repo, Path(tmp))
            try:
                for chunk in client.api.build(
                    path=tmp,
                    dockerfile="deploy/Dockerfile",
                    tag=tag,
                    rm=True,
                    forcerm=True,
                    network_mode="host",
                    decode=True,
                    buildargs={"BASE_IMAGE": BASE_IMAGE},
                ):
                    if "stream" in chunk:
                        log.append(chunk["stream"])
                    if "error" in chunk:
                        raise RuntimeError(f"deploy/Dockerfile build failed: {chunk['error']}\n{''.join(log)[-3000:]}")
            except docker.errors.APIError as e:
                raise RuntimeError(f"deploy/Dockerfile build failed: {e}\n{''.join(log)[-3000:]}") from None
        new = client.images.get(tag).id
        if old and old != new:  # the tag moved: free the previous build's own layers (shared ones stay)
            with contextlib.suppress(docker.errors.APIError):
                client.images.remove(old)
    finally:
        client.close()
    return BuiltImage(tag=tag, seconds=time.monotonic() - start, log_tail="".join(log)[-2000:])


if __name__ == "__main__":
    from testkit.dockerd import use_dockerd

    with use_dockerd() as info:
        print(build(info.docker_host, Path(__file__).resolve().parents[2]).model_dump_json(indent=2))
