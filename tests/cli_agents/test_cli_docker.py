"""CLI agents in Docker: the container (the test base image, which has no Node and no pip) runs the host's
cached install in place through a read-only mount (runtime included; copied in where there is no mount;
mini-swe-agent as wheels for the container's python3) and reaches the recording proxy on its network's
gateway."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mimo_core.agents.blackbox import install, placement, spec_for
from mimo_core.config import AgentConfig
from mimo_core.errors import ConfigError
from testkit.dockerd import BASE_IMAGE
from testkit.scripted_llm import Reply, call, turns
from tests.cli_agents.conftest import DEAD_REGISTRY, leaked_files, recorded_calls, run_cli_rollout
from tests.core.conftest import SECRET

EDIT = "sed -i s/hello/goodbye/ greeting.txt"


@pytest.fixture(scope="module")
def base_image_has_no_node(docker_client) -> None:
    out = docker_client.containers.run(BASE_IMAGE, ["sh", "-c", "command -v node || echo no-node"], remove=True)
    assert out.decode().strip() == "no-node"


@pytest.fixture
def offline_network(docker_client) -> Iterator[str]:
    """An internal network: the container reaches the host's gateway address (where the recording proxy
    listens) and nothing else — no DNS, no registry. Network mode none would leave the CLI no way to its
    model, so this is as offline as a CLI rollout can be."""
    name = f"mimo-test-offline-{uuid.uuid4().hex[:8]}"
    net = docker_client.networks.create(name, driver="bridge", internal=True)
    try:
        out = docker_client.containers.run(
            BASE_IMAGE, ["sh", "-c", "getent hosts registry.npmjs.org || echo none"], network_mode=name, remove=True
        )
        assert out.decode().strip() == "none"
        yield name
    finally:
        net.remove()


def _placed_from(rollout: Path) -> str:
    """Where the CLI ran from in the container, read from the command the rollout logged."""
    log = (rollout / "instance.log").read_text()
    return log.split(f"{placement.MOUNTED_CACHE}/", 1)[1].split("/bin/", 1)[0] if placement.MOUNTED_CACHE in log else ""


DONE = Reply(content="done")
SUBMIT = call("bash", command="echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")  # mini-swe-agent's way to finish


@pytest.mark.parametrize(
    ("cli", "protocol", "calls"),
    [
        ("claude-code", "anthropic", [("Bash", {"command": EDIT})]),
        ("codex", "responses", [("exec_command", {"cmd": EDIT})]),
        ("opencode", "chat", [("bash", {"command": EDIT, "description": "Edit the greeting"})]),
        # qwen-code refuses a `sed -i` on a file it has not read: read it first, as its model would
        (
            "qwen-code",
            "chat",
            [
                ("read_file", {"file_path": "/testbed/greeting.txt"}),
                ("run_shell_command", {"command": EDIT, "is_background": False}),
            ],
        ),
        ("gemini-cli", "gemini", [("run_shell_command", {"command": EDIT})]),
        ("mini-swe-agent", "chat", [("bash", {"command": EDIT})]),
    ],
)
def test_cli_agent_runs_in_a_container_without_node_and_passes(
    cli: str, protocol: str, calls: list, tmp_path: Path, scripted_llm, dockerd, base_image_has_no_node
) -> None:
    end = SUBMIT if cli == "mini-swe-agent" else DONE
    scripted_llm.set_responder(turns(*[Reply(tool_calls=[c]) for c in calls], end))
    record, rollout, traj = run_cli_rollout(
        tmp_path,
        scripted_llm,
        cli,
        protocol,
        row={"image": BASE_IMAGE},
        environment={"environment_class": "docker", "timeout": 120},
    )
    assert (record.exit_status, record.passed) == ("submitted", True), (
        rollout / "instance.log"
    ).read_text() + "\n".join(f"{m.role}: {m.content}" for m in traj.messages[2:])
    assert "+goodbye" in (traj.submission or "")
    tail = ["assistant", "tool", "assistant"] + (["tool"] if end.tool_calls else [])
    assert [m.role for m in traj.messages][-len(tail) :] == tail
    assert [json.loads(c.arguments) for m in traj.messages for c in m.tool_calls or ()][: len(calls)] == [
        args for _, args in calls
    ]
    assert len(recorded_calls(rollout, scripted_llm)) == len(calls) + 1
    assert leaked_files(tmp_path / "out", SECRET) == []
    spec = spec_for(cli)
    # in place, not copied; a PyPI CLI as wheels for the image's python3 (3.11 in bookworm)
    folder = spec.default_version + ("-cp311" if spec.ecosystem == "pypi" else "") if spec else ""
    assert _placed_from(rollout) == f"{cli}/{folder}"


def test_a_payload_installs_into_a_container_that_reaches_only_the_proxy(
    tmp_path: Path, scripted_llm, dockerd, claude_payload: Path, offline_network: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MIMOAGENT_CACHE_DIR", str(tmp_path / "fresh-cache"))
    scripted_llm.set_responder(turns(call("Bash", command=EDIT), Reply(content="done")))
    record, rollout, _ = run_cli_rollout(
        tmp_path,
        scripted_llm,
        "claude-code",
        "anthropic",
        row={"image": BASE_IMAGE},
        environment={
            "environment_class": "docker",
            "timeout": 120,
            "backend_kwargs": {"network_mode": offline_network},
        },
        payload_path=str(claude_payload),
        install_env={"NPM_REGISTRY": DEAD_REGISTRY},
    )
    assert (record.exit_status, record.passed) == ("submitted", True), (rollout / "instance.log").read_text()
    assert _placed_from(rollout).startswith("claude-code/payload-")


def test_without_the_mount_the_install_is_streamed_into_the_container(make_docker_env) -> None:
    """A remote engine (or a backend without mounts) gets the install streamed in from one tar."""
    spec = spec_for("claude-code")
    assert spec is not None
    host_dir = install.ensure_installed(spec, spec.default_version, {})
    env = make_docker_env(cwd="/testbed")
    assert env.spec.mounts == {}
    home = placement.place(env, host_dir, spec, spec.default_version)
    assert home == f"{placement.IN_SANDBOX_ROOT}/claude-code-{spec.default_version}"
    assert env.execute(f"{home}/bin/claude-code --version").output.startswith(spec.default_version)
    assert host_dir.with_name(host_dir.name + ".contents.tar").is_file()


def test_a_container_without_python3_cannot_run_mini_swe_agent_and_says_so(make_docker_env) -> None:
    env = make_docker_env(cwd="/testbed")
    assert env.execute("rm /usr/bin/python3 && ! command -v python3").returncode == 0
    spec = spec_for("mini-swe-agent")
    assert spec is not None
    with pytest.raises(ConfigError, match=r"needs python3 \(>= 3.10\) in the sandbox's image") as err:
        placement.obtain(spec, spec.default_version, AgentConfig(type="mini-swe-agent"), print, env)
    assert "\n" not in str(err.value)


def test_a_container_without_network_is_an_environment_error_saying_why(tmp_path: Path, scripted_llm, dockerd) -> None:
    record, _, _ = run_cli_rollout(
        tmp_path,
        scripted_llm,
        "claude-code",
        "anthropic",
        exit_code=None,
        row={"image": BASE_IMAGE, "network": False},
        environment={"environment_class": "docker", "timeout": 120},
    )
    assert record.exit_status == "environment_error"
    assert "has no network" in (record.error or "") and scripted_llm.requests == []
