"""One output-token cap in every profile, sent under each protocol's own name; shipped configs set it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mimo_core.config import read_config
from tests.models.helpers import PROTOCOLS, model_for, start_messages

REPO = Path(__file__).resolve().parents[2]
NATIVE = {"chat": "max_completion_tokens", "responses": "max_output_tokens", "anthropic": "max_tokens"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_max_output_tokens_is_sent_under_the_protocols_name(scripted_llm, protocol):
    model_for(scripted_llm, protocol, max_output_tokens=321).query(start_messages(), [])
    body = scripted_llm.requests[0].body
    assert body[NATIVE[protocol]] == 321
    assert "max_output_tokens" not in body or protocol == "responses"


@pytest.mark.parametrize("path", sorted((REPO / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_caps_the_output_of_each_reply(path: Path, monkeypatch) -> None:
    cfg = read_config(path).config
    models = [cfg.model] if cfg.agent.type == "default" else []  # CLI agents make their own calls
    if cfg.environment.judge_agent is not None:
        models.append(cfg.environment.judge_agent.model)
    for model in models:
        capped = {"max_output_tokens", "max_tokens", "max_completion_tokens"} & set(model.model_kwargs)
        assert capped, f"{path.name}: model {model.model_name} has no output-token cap"


def test_the_cap_stays_readable_in_saved_configs_while_secrets_are_redacted() -> None:
    from mimo_core.config import mask_secret_keys as redact

    saved = redact({"max_output_tokens": 64, "max_tokens": 32, "auth_token": "t0ken-value", "api_key": "sk-x"})
    assert saved == {"max_output_tokens": 64, "max_tokens": 32, "auth_token": "***", "api_key": "***"}
