"""Task images built from a Dockerfile when no prebuilt image exists, cached by content hash."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from mimo_core.environments.docker.images import build_tag
from mimo_core.errors import SandboxError


def _context(tmp_path: Path, token: str) -> Path:
    ctx = tmp_path / "task" / "environment"
    ctx.mkdir(parents=True)
    (ctx / "marker.txt").write_text(token)
    (ctx / "Dockerfile").write_text(
        "FROM mimo-base:bookworm\nCOPY marker.txt /opt/marker.txt\nRUN date +%s%N > /opt/built-at\nWORKDIR /testbed\n"
    )
    return ctx


def test_dockerfile_is_built_once_and_reused_by_content_hash(make_docker_env, docker_client, tmp_path) -> None:
    token = uuid.uuid4().hex  # a context no earlier run has built
    ctx = _context(tmp_path, token)
    tag = build_tag(ctx)
    assert not docker_client.images.list(name=tag)
    first = make_docker_env(image=None, dockerfile_dir=str(ctx))
    assert first.image == tag
    assert first.read_file("/opt/marker.txt").decode() == token
    built_at = first.read_file("/opt/built-at")
    second = make_docker_env(image="task-image-that-was-never-pushed:1", dockerfile_dir=str(ctx))
    assert second.image == tag
    assert second.read_file("/opt/built-at") == built_at  # same image: no rebuild

    (ctx / "marker.txt").write_text(token + "-changed")
    assert build_tag(ctx) != tag
    third = make_docker_env(image=None, dockerfile_dir=str(ctx))
    assert third.read_file("/opt/marker.txt").decode().endswith("-changed")
    for t in (tag, build_tag(ctx)):
        docker_client.images.remove(t, force=True)


def test_broken_dockerfile_is_a_sandbox_error_with_the_build_log(make_docker_env, tmp_path) -> None:
    ctx = tmp_path / "environment"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text("FROM mimo-base:bookworm\nRUN echo about-to-fail && exit 7\n")
    env = make_docker_env(image=None, dockerfile_dir=str(ctx), start=False)
    with pytest.raises(SandboxError, match="(?s)Dockerfile failed.*about-to-fail"):
        env.start()


def test_a_build_past_the_tasks_build_timeout_is_a_sandbox_error(make_docker_env, tmp_path) -> None:
    """The task's own build timeout (Harbor `[environment].build_timeout_sec`, `SandboxSpec.build_timeout`)
    bounds the build, not the environment's 120 s startup_timeout."""
    ctx = tmp_path / "environment"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text(f"FROM mimo-base:bookworm\nRUN echo {uuid.uuid4().hex} && sleep 60\n")
    env = make_docker_env(image=None, dockerfile_dir=str(ctx), build_timeout=2, start=False)
    started = time.monotonic()
    with pytest.raises(SandboxError, match="Dockerfile failed"):
        env.start()
    assert time.monotonic() - started < 30


def test_image_prefix_reaches_the_from_lines_of_a_build(docker_client, tmp_path) -> None:
    """A mirror-only site: the base image exists only under the mirror's name, so the build can only
    succeed if the prefix reached its FROM line."""
    from mimo_core.config import EnvironmentConfig
    from mimo_core.environments.base import SandboxSpec
    from mimo_core.environments.docker.environment import DockerEnvironment
    from testkit.dockerd import BASE_IMAGE

    mirror = f"mirror-{uuid.uuid4().hex[:8]}.test/"
    docker_client.images.get(BASE_IMAGE).tag(f"{mirror}only-on-the-mirror", "1")
    ctx = tmp_path / "environment"
    ctx.mkdir()
    (ctx / "data.txt").write_text("from the context\n")
    (ctx / "Dockerfile").write_text("FROM only-on-the-mirror:1 AS stage\nCOPY data.txt /opt/data.txt\nFROM stage\n")
    env = DockerEnvironment(
        SandboxSpec(image=None, dockerfile_dir=str(ctx), labels={"mimoagent.run_id": "pytest"}),
        EnvironmentConfig(environment_class="docker", image_prefix=mirror),
    )
    try:
        env.start()
        assert env.image == build_tag(ctx, mirror) != build_tag(ctx)
        assert env.read_file("/opt/data.txt") == b"from the context\n"
    finally:
        env.stop()
        docker_client.images.remove(build_tag(ctx, mirror), force=True)
        docker_client.images.remove(f"{mirror}only-on-the-mirror:1")


def test_prefix_from_lines_leaves_stages_scratch_and_build_args_alone() -> None:
    from mimo_core.environments.docker.images import prefix_from_lines

    dockerfile = (
        "FROM python:3.11 AS build\nFROM --platform=linux/amd64 debian:12\nFROM build\n"
        "FROM scratch\nFROM $BASE\nFROM m.io/already\nRUN echo FROM x\n"
    )
    assert prefix_from_lines(dockerfile, "m.io/") == (
        "FROM m.io/python:3.11 AS build\nFROM --platform=linux/amd64 m.io/debian:12\nFROM build\n"
        "FROM scratch\nFROM $BASE\nFROM m.io/already\nRUN echo FROM x\n"
    )
    assert prefix_from_lines(dockerfile, "") == dockerfile


def test_an_image_that_cannot_be_pulled_or_built_says_both_and_names_the_registry(make_docker_env, tmp_path) -> None:
    """A DeepSWE row on a machine that cannot reach its registry: the pull fails first, then the build
    from its Dockerfile; the first line of the error (what the console shows) says all of it."""
    ctx = tmp_path / "environment"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text("FROM mimo-tests/no-such-base-image:never\nWORKDIR /app\n")
    image = "public.ecr.aws/mimo-tests/no-such-task-image:v1"
    env = make_docker_env(image=image, dockerfile_dir=str(ctx), start=False)
    with pytest.raises(SandboxError) as caught:
        env.start()
    first = str(caught.value).splitlines()[0]
    assert f"image {image!r} is not on the engine and could not be pulled from the registry public.ecr.aws" in first
    assert f"its Dockerfile ({ctx}) was built instead, and the build failed: " in first
    assert first.split("the build failed: ", 1)[1].strip()  # the engine's own reason
