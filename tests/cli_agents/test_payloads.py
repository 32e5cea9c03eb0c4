"""Offline payloads: `mimoagent payload build` packs a CLI once; a rollout installs from the archive
with an empty cache and a registry that cannot be reached, and passes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from testkit.scripted_llm import Reply, call, turns
from tests.cli_agents.conftest import DEAD_REGISTRY, REPO, run_cli_rollout


def test_a_rollout_installs_from_the_payload_with_no_registry(
    tmp_path: Path, scripted_llm, claude_payload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty_cache = tmp_path / "fresh-cache"
    monkeypatch.setenv("MIMOAGENT_CACHE_DIR", str(empty_cache))
    scripted_llm.set_responder(
        turns(call("Bash", command="sed -i s/hello/goodbye/ greeting.txt"), Reply(content="done"))
    )
    record, rollout, _ = run_cli_rollout(
        tmp_path,
        scripted_llm,
        "claude-code",
        "anthropic",
        payload_path=str(claude_payload),
        install_env={"NPM_REGISTRY": DEAD_REGISTRY},
    )
    assert (record.exit_status, record.passed) == ("submitted", True), (rollout / "instance.log").read_text()
    assert [p.name for p in (empty_cache / "cli" / "claude-code").iterdir() if p.name.startswith("payload-")]
    assert not (empty_cache / "cli" / "claude-code" / "2.1.332").exists()  # never installed from a registry


def test_a_payload_of_another_version_is_refused(
    tmp_path: Path, scripted_llm, claude_payload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MIMOAGENT_CACHE_DIR", str(tmp_path / "fresh-cache"))
    record, _, _ = run_cli_rollout(
        tmp_path,
        scripted_llm,
        "claude-code",
        "anthropic",
        exit_code=None,
        payload_path=str(claude_payload),
        version="2.1.0",
    )
    assert record.exit_status == "config_error"
    assert "holds claude-code 2.1.332, the config asks for claude-code 2.1.0" in (record.error or "")
    assert not (tmp_path / "fresh-cache" / "cli" / "claude-code").exists()  # refused before unpacking


def test_the_payload_script_wraps_the_command() -> None:
    script = REPO / "scripts" / "harness_payloads" / "build_harness_payloads.sh"
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "usage:" in proc.stderr


def test_a_payload_url_is_fetched_once_and_installed(
    tmp_path: Path, scripted_llm, claude_payload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "fresh-cache"
    monkeypatch.setenv("MIMOAGENT_CACHE_DIR", str(cache))
    scripted_llm.set_responder(
        turns(call("Bash", command="sed -i s/hello/goodbye/ greeting.txt"), Reply(content="done"))
    )
    record, rollout, _ = run_cli_rollout(
        tmp_path,
        scripted_llm,
        "claude-code",
        "anthropic",
        payload_url=claude_payload.as_uri(),
        install_env={"NPM_REGISTRY": DEAD_REGISTRY},
    )
    assert (record.exit_status, record.passed) == ("submitted", True), (rollout / "instance.log").read_text()
    assert len(list((cache / "downloads").glob("*.tar.gz"))) == 1


def test_an_unreachable_payload_url_is_an_environment_error(tmp_path: Path, scripted_llm) -> None:
    record, _, _ = run_cli_rollout(
        tmp_path, scripted_llm, "claude-code", "anthropic", exit_code=None, payload_url=DEAD_REGISTRY + "claude.tar.gz"
    )
    assert record.exit_status == "environment_error"
    assert "agent.payload_url: cannot download" in (record.error or "")
