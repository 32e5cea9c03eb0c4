"""Config checks for CLI agents happen at load: a wrong protocol, an unknown CLI or `latest` never
reaches a sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mimo_core import plugins
from mimo_core.agents.blackbox import cli_agents, spec_for
from mimo_core.agents.blackbox.install import resolve_version
from mimo_core.config import read_config
from mimo_core.errors import ConfigError


def _write(tmp_path: Path, agent: dict, protocol: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"agent": agent, "model": {"protocol": protocol}}))
    return path


def test_each_registered_cli_declares_the_protocol_of_its_module() -> None:
    assert len(cli_agents()) == 6
    for name in cli_agents():
        spec = spec_for(name)
        assert spec is not None and spec.name == name and spec.protocol == plugins.find("agents", name).speaks
    assert spec_for("default") is None and spec_for("oracle") is None and spec_for("no-such-agent") is None


def test_a_cli_agent_with_the_wrong_protocol_is_refused_at_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="claude-code talks to its model in the 'anthropic' protocol"):
        read_config(_write(tmp_path, {"type": "claude-code"}, "chat"))


def test_an_unknown_cli_is_refused_at_load_naming_the_file_and_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"c\.yaml: agent\.type: .*unknown agent type 'claud-code'"):
        read_config(_write(tmp_path, {"type": "claud-code"}, "anthropic"))


def test_gemini_protocol_is_for_gemini_cli_only(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="only spoken by agent.type gemini-cli"):
        read_config(_write(tmp_path, {"type": "default"}, "gemini"))
    assert read_config(_write(tmp_path, {"type": "gemini-cli"}, "gemini")).config.agent.type == "gemini-cli"


def test_latest_is_refused_unless_allowed_and_versions_cannot_inject_shell() -> None:
    spec = spec_for("codex")
    assert spec is not None
    assert resolve_version(spec, None, False) == spec.default_version
    with pytest.raises(ConfigError, match="'latest' is refused for codex"):
        resolve_version(spec, "latest", False)
    assert resolve_version(spec, "latest", True) == "latest"
    with pytest.raises(ConfigError, match="is not a version of @openai/codex"):
        resolve_version(spec, "1.0; rm -rf /", False)


def test_every_cli_agent_has_a_shipped_profile_that_loads() -> None:
    configs = Path(__file__).resolve().parents[2] / "configs"
    for name in cli_agents():
        cfg = read_config(configs / f"{name.replace('-', '_')}.yaml").config
        assert (cfg.agent.type, cfg.model.protocol) == (name, plugins.find("agents", name).speaks)
