"""CLI agents in Docker: the container (the test base image, which has no Node) gets the cached install
copied in, runtime included, and reaches the recording proxy on its bridge gateway."""

from __future__ import annotations

from pathlib import Path

import pytest

from mimo_core.testing.dockerd import BASE_IMAGE
from mimo_core.testing.scripted_llm import Reply, call, turns
from tests.cli_agents.conftest import DEAD_REGISTRY, leaked_files, recorded_calls, run_cli_rollout
from tests.core.conftest import SECRET
from tests.docker.conftest import docker_client, dockerd  # noqa: F401 - fixtures

EDIT = "sed -i s/hello/goodbye/ greeting.txt"


@pytest.fixture
def base_image_has_no_node(docker_client) -> None:  # noqa: F811 - fixture
    out = docker_client.containers.run(BASE_IMAGE, ["sh", "-c", "command -v node || echo no-node"], remove=True)
    assert out.decode().strip() == "no-node"


@pytest.mark.parametrize(("cli", "protocol", "tool", "args"), [
    ("claude-code", "anthropic", "Bash", {"command": EDIT}),
    ("codex", "responses", "exec_command", {"cmd": EDIT}),
])
def test_cli_agent_runs_in_a_container_without_node_and_passes(
        cli: str, protocol: str, tool: str, args: dict, tmp_path: Path, scripted_llm, dockerd,  # noqa: F811
        base_image_has_no_node) -> None:
    scripted_llm.set_responder(turns(Reply(tool_calls=[(tool, args)]), Reply(content="done")))
    record, rollout, traj = run_cli_rollout(tmp_path, scripted_llm, cli, protocol, row={"image": BASE_IMAGE},
                                            environment={"environment_class": "docker", "timeout": 120})
    assert (record.exit_status, record.passed) == ("submitted", True), (rollout / "instance.log").read_text()
    assert "+goodbye" in (traj.submission or "")
    assert [m.role for m in traj.messages][-3:] == ["assistant", "tool", "assistant"]
    assert len(recorded_calls(rollout, scripted_llm)) == 2
    assert leaked_files(tmp_path / "out", SECRET) == []


def test_a_payload_installs_into_a_container_with_no_registry(tmp_path: Path, scripted_llm, dockerd,  # noqa: F811
                                                             claude_payload: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIMOAGENT_CACHE_DIR", str(tmp_path / "fresh-cache"))
    scripted_llm.set_responder(turns(call("Bash", command=EDIT), Reply(content="done")))
    record, rollout, _ = run_cli_rollout(tmp_path, scripted_llm, "claude-code", "anthropic", row={"image": BASE_IMAGE},
                                         environment={"environment_class": "docker", "timeout": 120},
                                         payload_path=str(claude_payload),
                                         install_env={"NPM_REGISTRY": DEAD_REGISTRY})
    assert (record.exit_status, record.passed) == ("submitted", True), (rollout / "instance.log").read_text()


def test_mini_swe_agent_in_a_container_is_a_config_error(tmp_path: Path, scripted_llm, dockerd) -> None:  # noqa: F811
    record, _, _ = run_cli_rollout(tmp_path, scripted_llm, "mini-swe-agent", "chat", row={"image": BASE_IMAGE},
                                   environment={"environment_class": "docker", "timeout": 120}, exit_code=None)
    assert record.exit_status == "config_error" and "environment_class: local" in (record.error or "")


def test_a_container_without_network_is_an_environment_error_saying_why(tmp_path: Path, scripted_llm,
                                                                         dockerd) -> None:  # noqa: F811
    record, _, _ = run_cli_rollout(tmp_path, scripted_llm, "claude-code", "anthropic", exit_code=None,
                                   row={"image": BASE_IMAGE, "network": False},
                                   environment={"environment_class": "docker", "timeout": 120})
    assert record.exit_status == "environment_error"
    assert "has no network" in (record.error or "") and scripted_llm.requests == []
