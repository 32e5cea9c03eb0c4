"""Tests against a real Docker engine (started on demand by tests/infra/dockerd.py)."""

from tests.infra.docker_fixtures import docker_client, dockerd, make_docker_env  # noqa: F401
