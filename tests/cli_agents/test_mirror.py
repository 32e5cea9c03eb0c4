"""Mirrors: `agent.install_env` NPM_REGISTRY sends the install through a real local registry mirror
(verdaccio on 127.0.0.1); its log shows the packages went through it, and the rollout passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit import verdaccio
from testkit.scripted_llm import Reply, call, turns
from tests.cli_agents.conftest import CACHE, needs_npm, run_cli_rollout


def test_install_goes_through_the_npm_mirror_of_install_env(
    tmp_path: Path, scripted_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    needs_npm()
    monkeypatch.setenv("MIMOAGENT_CACHE_DIR", str(tmp_path / "fresh-cache"))  # nothing installed, nothing cached
    scripted_llm.set_responder(
        turns(call("Bash", command="sed -i s/hello/goodbye/ greeting.txt"), Reply(content="done"))
    )
    mirror_dir = tmp_path / "mirror"
    mirror_dir.mkdir()
    storage = CACHE / "verdaccio-storage"  # kept: later runs are served from it, still through the mirror
    with verdaccio.running(CACHE, mirror_dir, storage) as mirror:
        record, rollout, _ = run_cli_rollout(
            tmp_path, scripted_llm, "claude-code", "anthropic", install_env={"NPM_REGISTRY": mirror.url}
        )
        log = mirror.log.read_text()
    assert (record.exit_status, record.passed) == ("submitted", True), (rollout / "instance.log").read_text()
    assert "@anthropic-ai/claude-code" in log or "@anthropic-ai%2fclaude-code" in log
    assert "claude-code-linux-x64" in log  # the platform binary came through the mirror too
    assert list(storage.rglob("claude-code-linux-x64-2.1.332.tgz"))
