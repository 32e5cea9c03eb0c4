"""Offline payloads: `mimoagent payload build` packs a CLI once; a rollout installs from the archive
with an empty cache and a registry that cannot be reached, and passes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mimo_core.agents.cli import spec_for
from mimo_core.agents.cli.payload import archive_name
from mimo_core.testing.scripted_llm import Reply, call, turns
from tests.cli_agents.conftest import CACHE, REPO, needs_npm, run_cli_rollout

DEAD_REGISTRY = "http://127.0.0.1:9/"  # nothing listens on the discard port: any registry access fails


@pytest.fixture(scope="module")
def claude_payload() -> Path:
    """Built once per machine through the command users run (kept in the test cache)."""
    needs_npm()
    spec = spec_for("claude-code")
    assert spec is not None
    out = CACHE / "payloads"
    target = out / archive_name(spec, spec.default_version)
    if not target.exists():
        proc = subprocess.run([sys.executable, "-m", "mimo_core.cli", "payload", "build", "--cli", "claude-code",
                               "-o", str(out)], cwd=REPO, capture_output=True, text=True, timeout=1800,
                              env={**os.environ, "MIMOAGENT_CACHE_DIR": str(CACHE)})
        assert proc.returncode == 0, proc.stderr
        assert str(target) in proc.stdout
    return target


def test_a_rollout_installs_from_the_payload_with_no_registry(tmp_path: Path, scripted_llm, claude_payload: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    empty_cache = tmp_path / "fresh-cache"
    monkeypatch.setenv("MIMOAGENT_CACHE_DIR", str(empty_cache))
    scripted_llm.set_responder(turns(call("Bash", command="sed -i s/hello/goodbye/ greeting.txt"),
                                     Reply(content="done")))
    record, rollout, _ = run_cli_rollout(tmp_path, scripted_llm, "claude-code", "anthropic",
                                         payload_path=str(claude_payload),
                                         install_env={"NPM_REGISTRY": DEAD_REGISTRY})
    assert (record.exit_status, record.passed) == ("submitted", True), (rollout / "instance.log").read_text()
    assert [p.name for p in (empty_cache / "cli" / "claude-code").iterdir() if p.name.startswith("payload-")]
    assert not (empty_cache / "cli" / "claude-code" / "2.1.332").exists()  # never installed from a registry


def test_a_payload_of_another_version_is_refused(tmp_path: Path, scripted_llm, claude_payload: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIMOAGENT_CACHE_DIR", str(tmp_path / "fresh-cache"))
    record, _, _ = run_cli_rollout(tmp_path, scripted_llm, "claude-code", "anthropic", exit_code=None,
                                   payload_path=str(claude_payload), version="2.1.0")
    assert record.exit_status == "config_error"
    assert "holds claude-code 2.1.332, the config asks for claude-code 2.1.0" in (record.error or "")


def test_the_payload_script_wraps_the_command() -> None:
    script = REPO / "scripts" / "harness_payloads" / "build_harness_payloads.sh"
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "usage:" in proc.stderr
