"""The code-location image, built from deploy/Dockerfile for real with the test dockerd, loads the Dagster
definitions. The first build on a machine downloads the locked dependencies (minutes); the engine keeps
that layer (keyed on pyproject.toml + uv.lock), so later builds only redo the project layers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.deploy_image import build
from testkit.dockerd import DockerdInfo, use_dockerd
from tests.host_needs import unavailable

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def engine() -> Iterator[DockerdInfo]:
    if os.geteuid() != 0:
        unavailable("starting a private dockerd needs root")
    with use_dockerd() as info:
        yield info


@pytest.mark.timeout(2400)
def test_code_location_image_builds_and_its_definitions_validate(engine: DockerdInfo) -> None:
    import docker

    image = build(engine.docker_host, REPO)
    client = docker.DockerClient(base_url=engine.docker_host, version="auto", timeout=300)
    try:
        # No network: everything the code location needs is in the image. No secret either.
        validate = ["dagster", "definitions", "validate", "-m", "mimo_assets.definitions_k8s"]  # as the Helm values
        out = client.containers.run(
            image.tag,
            validate,
            network_mode="none",
            remove=True,
            stdout=True,
            stderr=True,
            environment={"DAGSTER_HOME": "/tmp"},
        )
        text = out.decode(errors="replace")
        assert "Validation successful" in text, text[-2000:]
        config = client.images.get(image.tag).attrs["Config"]
        assert config["Cmd"][:3] == ["dagster", "code-server", "start"] and config["Cmd"][-1] == validate[-1]
        assert not any("KEY=" in e or "PASSWORD" in e for e in config["Env"])
        assert "/app/.venv/bin" in next(e for e in config["Env"] if e.startswith("PATH="))
    finally:
        client.close()
