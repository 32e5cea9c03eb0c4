"""Config files: validation errors name file and dotted path, ${VAR} expansion, overrides, redaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from mimo_core.config import assign_config, parse_override, read_config, read_configs
from mimo_core.errors import ConfigError


def _write(tmp_path: Path, text: str, name: str = "profile.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_unknown_key_names_file_and_dotted_path(tmp_path: Path) -> None:
    p = _write(tmp_path, "agent:\n  step_limt: 5\n")
    with pytest.raises(ConfigError, match=r"profile\.yaml: agent\.step_limt: unknown key"):
        read_config(p)


def test_mistyped_value_names_file_and_dotted_path(tmp_path: Path) -> None:
    p = _write(tmp_path, "model:\n  retry:\n    max_attempts: lots\n")
    with pytest.raises(ConfigError, match=r"profile\.yaml: model\.retry\.max_attempts"):
        read_config(p)


def test_env_vars_expand_with_defaults(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MIMO_T_MODEL", "m-1")
    monkeypatch.delenv("MIMO_T_UNSET", raising=False)
    p = _write(
        tmp_path,
        'model:\n  model_name: "${MIMO_T_MODEL}"\n  model_kwargs:\n'
        '    base_url: "${MIMO_T_UNSET:-http://x/v1}"\n    temperature: "${MIMO_T_UNSET:-0.5}"\n'
        'agent:\n  step_limit: "${MIMO_T_UNSET:-7}"\n',
    )
    cfg = read_config(p).config
    assert cfg.model.model_name == "m-1"
    assert cfg.model.model_kwargs["base_url"] == "http://x/v1"
    assert cfg.agent.step_limit == 7


def test_unset_var_without_default_names_variable_and_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("MIMO_T_NOPE", raising=False)
    p = _write(tmp_path, 'model:\n  model_name: "${MIMO_T_NOPE}"\n')
    with pytest.raises(ConfigError, match=r"profile\.yaml: environment variable \$\{MIMO_T_NOPE\}"):
        read_config(p)


def test_override_deep_merges(tmp_path: Path) -> None:
    p = _write(tmp_path, "agent:\n  step_limit: 5\n  cost_limit: 2.0\n")
    cfg = read_config(p, [parse_override('{"agent": {"step_limit": 50}}')]).config
    assert (cfg.agent.step_limit, cfg.agent.cost_limit) == (50, 2.0)


def test_bad_override_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="--override-config"):
        parse_override("{agent: 1}")
    with pytest.raises(ConfigError, match="JSON object"):
        parse_override("[1]")


def test_assignment_is_seeded_and_independent_of_order(tmp_path: Path) -> None:
    configs = read_configs([str(_write(tmp_path, "model: {}\n", name)) for name in ("a.yaml", "b.yaml")])
    ids = [f"inst-{i}" for i in range(40)]
    first = {i: assign_config(i, configs, seed=1).name for i in ids}
    again = {i: assign_config(i, configs, seed=1).name for i in reversed(ids)}
    assert first == again and set(first.values()) == {"a", "b"}
    assert first != {i: assign_config(i, configs, seed=2).name for i in ids}


def test_redacted_config_hides_secrets(tmp_path: Path) -> None:
    p = _write(tmp_path, "model:\n  model_kwargs:\n    api_key: sk-live-123\n    base_url: http://h/v1\n")
    red = read_config(p).redacted()
    assert red["model"]["model_kwargs"] == {"api_key": "***", "base_url": "http://h/v1"}
    assert "sk-live-123" not in str(red)


def test_unknown_agent_type_and_backend_are_config_errors(tmp_path: Path) -> None:
    p = _write(tmp_path, "agent:\n  type: claude-kode\n")
    with pytest.raises(ConfigError, match=r"profile\.yaml: agent\.type: .*unknown agent type 'claude-kode'"):
        read_config(p)
    p = _write(tmp_path, "environment:\n  environment_class: dokker\n")
    known = r"\['local', 'docker', 'kubernetes', 'e2b', 'cube'\]"
    with pytest.raises(ConfigError, match=r"environment\.environment_class: .*'dokker'.*" + known):
        read_config(p)


def test_anchors_merge_keys_and_numbers_as_text_still_load(tmp_path: Path) -> None:
    """The limits refuse bombs and duplicates, not ordinary YAML: anchors, `<<` merges (whose keys an
    explicit key overrides) and numbers written as text keep working."""
    p = _write(
        tmp_path,
        "model: &m\n  model_name: m-1\n  retry: {max_attempts: 2, timeout: '9'}\n"
        "environment:\n  judge_agent:\n    model:\n      <<: *m\n      model_name: judge-1\n"
        "agent:\n  step_limit: '12'\n",
    )
    cfg = read_config(p).config
    assert cfg.model.retry.max_attempts == 2 and cfg.model.retry.timeout == 9.0 and cfg.agent.step_limit == 12
    judge = cfg.environment.judge_agent
    assert judge is not None and judge.model.model_name == "judge-1" and judge.model.retry.max_attempts == 2


def test_a_key_given_twice_is_an_error_naming_it(tmp_path: Path) -> None:
    p = _write(tmp_path, "agent:\n  step_limit: 5\n  cost_limit: 1\n  step_limit: 50\n")
    with pytest.raises(
        ConfigError,
        match=r"profile\.yaml: invalid YAML: .*found the key 'step_limit' twice "
        r"\(line 4, column 3\)",
    ):
        read_config(p)
