"""Project-wide fixtures. Keep this file tiny: subfolders hold their own conftest.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.scripted_llm import ScriptedLLM, call, turns
from tests.host_needs import unavailable

# The container backends' fixtures (dockerd, docker_client, make_docker_env, k8s, make_k8s_env), for
# every folder: the backend contract suite, the CLI-agent and Ray tests use them beside tests/docker.
pytest_plugins = ["tests.backend_fixtures"]


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    """A started scripted endpoint whose model just calls `submit`; tests script it with `.set_responder`."""
    with ScriptedLLM(turns(call("submit"))) as server:
        yield server


def _shared_candidates(repo: Path) -> list[Path]:
    """`shared/` lies beside the checkout (in CI, a copy beside the clone). From a git worktree, also
    beside the main checkout the worktree belongs to."""
    found = [repo.parent / "shared"]
    dot_git = repo / ".git"
    if dot_git.is_file():  # "gitdir: <main>/.git/worktrees/<name>"
        gitdir = Path(dot_git.read_text().split(":", 1)[1].strip())
        found.append(gitdir.parents[2].parent / "shared")
    return found


@pytest.fixture(scope="session")
def harbor_samples() -> Path:
    """The DeepSWE Harbor samples in ../shared/harbor-samples. Absent on a developer machine: skip; absent
    in CI (CI=true), where the copy must be there: fail, so the tests never silently check nothing."""
    repo = Path(__file__).resolve().parents[1]
    for shared in _shared_candidates(repo):
        if (shared / "harbor-samples").is_dir():
            return shared / "harbor-samples"
    where = ", ".join(str(c) for c in _shared_candidates(repo))
    unavailable(f"shared/harbor-samples not found (looked in {where}); CI puts shared/ beside the clone")
