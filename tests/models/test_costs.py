"""Each call's cost from the usage the endpoint returned, per protocol's usage shape, against a hand
computation: cache reads, cache writes (Anthropic's cache creation) and reasoning tokens at their own rates."""

from __future__ import annotations

import pytest

from mimo_core.agents.blackbox.streams import usage_of
from mimo_core.config import PricingConfig
from mimo_core.models.base import Usage
from mimo_core.models.protocol import compute_cost
from testkit.scripted_llm import Reply, turns
from tests.models.helpers import model_for, start_messages

PRICES = PricingConfig(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75, reasoning=10.0)
# 1000 prompt tokens (200 read from the cache), 300 output tokens (120 of them reasoning):
# 800 x 3 + 200 x 0.3 + 180 x 15 + 120 x 10 = 2400 + 60 + 2700 + 1200 dollars per million
OPENAI_SHAPE = (2400 + 60 + 2700 + 1200) / 1e6
# Anthropic: 1000 prompt tokens, of them 200 read from the cache and 100 written to it; 300 output tokens
# (thinking included, not reported apart): 700 x 3 + 200 x 0.3 + 100 x 3.75 + 300 x 15
ANTHROPIC_SHAPE = (2100 + 60 + 375 + 4500) / 1e6


@pytest.mark.parametrize("protocol", ["chat", "responses"])
def test_openai_shapes_cached_and_reasoning_tokens_at_their_rates(scripted_llm, protocol: str) -> None:
    reply = Reply(content="ok", prompt_tokens=1000, completion_tokens=300, cached_tokens=200, reasoning_tokens=120)
    scripted_llm.set_responder(turns(reply))
    resp = model_for(scripted_llm, protocol, pricing=PRICES).query(start_messages(), [])
    assert resp.usage == Usage(prompt_tokens=1000, completion_tokens=300, cached_tokens=200, reasoning_tokens=120)
    assert resp.cost == pytest.approx(OPENAI_SHAPE)


def test_anthropic_shape_cache_writes_at_the_cache_write_rate(scripted_llm) -> None:
    reply = Reply(content="ok", prompt_tokens=1000, completion_tokens=300, cached_tokens=200, cache_write_tokens=100)
    scripted_llm.set_responder(turns(reply))
    resp = model_for(scripted_llm, "anthropic", pricing=PRICES).query(start_messages(), [])
    assert resp.response["usage"] == {
        "input_tokens": 700,
        "output_tokens": 300,
        "cache_read_input_tokens": 200,
        "cache_creation_input_tokens": 100,
    }
    assert resp.usage == Usage(prompt_tokens=1000, completion_tokens=300, cached_tokens=200, cache_write_tokens=100)
    assert resp.cost == pytest.approx(ANTHROPIC_SHAPE)


def test_the_cli_agents_usage_shapes_cost_the_same() -> None:
    """What the recording proxy reads from each protocol's reply (streams.usage_of), Gemini's too."""
    shapes = {
        "chat": {
            "usage": {
                "prompt_tokens": 1000,
                "completion_tokens": 300,
                "prompt_tokens_details": {"cached_tokens": 200},
                "completion_tokens_details": {"reasoning_tokens": 120},
            }
        },
        "responses": {
            "usage": {
                "input_tokens": 1000,
                "output_tokens": 300,
                "input_tokens_details": {"cached_tokens": 200},
                "output_tokens_details": {"reasoning_tokens": 120},
            }
        },
        # Gemini counts thoughts beside the candidates: 180 + 120 output tokens
        "gemini": {
            "usageMetadata": {
                "promptTokenCount": 1000,
                "candidatesTokenCount": 180,
                "cachedContentTokenCount": 200,
                "thoughtsTokenCount": 120,
            }
        },
    }
    for protocol, response in shapes.items():
        usage = usage_of(protocol, response)
        assert (usage.completion_tokens, usage.reasoning_tokens) == (300, 120), protocol
        assert compute_cost(usage, PRICES) == pytest.approx(OPENAI_SHAPE), protocol
    anthropic = usage_of(
        "anthropic",
        {
            "usage": {
                "input_tokens": 700,
                "output_tokens": 300,
                "cache_read_input_tokens": 200,
                "cache_creation_input_tokens": 100,
            }
        },
    )
    assert compute_cost(anthropic, PRICES) == pytest.approx(ANTHROPIC_SHAPE)


def test_rates_not_given_are_the_plain_ones() -> None:
    usage = Usage(
        prompt_tokens=1000, completion_tokens=300, cached_tokens=200, cache_write_tokens=100, reasoning_tokens=50
    )
    plain = PricingConfig(input=2.0, output=8.0)
    assert compute_cost(usage, plain) == pytest.approx((1000 * 2.0 + 300 * 8.0) / 1e6)
    assert compute_cost(usage, None) == 0.0
    # counts that say more than the whole never make a negative part
    odd = Usage(prompt_tokens=10, completion_tokens=5, cached_tokens=50, cache_write_tokens=50, reasoning_tokens=9)
    assert compute_cost(odd, PRICES) == pytest.approx((10 * 0.3 + 5 * 10.0) / 1e6)
