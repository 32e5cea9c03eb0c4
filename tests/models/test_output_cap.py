"""One output-token cap in every profile, sent under each protocol's own name; shipped configs set it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mimo_core.config import load_config
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
    cfg = load_config(path).config
    models = [cfg.model] if cfg.agent.type != "oracle" else []
    if cfg.environment.judge_agent is not None:
        models.append(cfg.environment.judge_agent.model)
    for model in models:
        capped = {"max_output_tokens", "max_tokens", "max_completion_tokens"} & set(model.model_kwargs)
        assert capped, f"{path.name}: model {model.model_name} has no output-token cap"
