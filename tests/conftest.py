"""Project-wide fixtures. Keep this file tiny: subfolders hold their own conftest.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.scripted_llm import ScriptedLLM, call, turns

# The container backends' fixtures (dockerd, docker_client, make_docker_env, k8s, make_k8s_env), for
# every folder: the backend contract suite, the CLI-agent and Ray tests use them beside tests/docker.
pytest_plugins = ["tests.backend_fixtures"]


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    """A started scripted endpoint whose model just calls `submit`; tests script it with `.set_responder`."""
    with ScriptedLLM(turns(call("submit"))) as server:
        yield server


@pytest.fixture(scope="session")
def harbor_samples() -> Path:
    """The metadata of four DeepSWE tasks in Harbor layout, carried in tests/data (licence in its README)."""
    return Path(__file__).resolve().parent / "data" / "harbor-samples"
