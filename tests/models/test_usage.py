"""Per-call accounting: tokens, cost from the price table, latency, and token ids/logprobs for training."""

from __future__ import annotations

import pytest

from mimo_core.config import ModelConfig, PricingConfig
from mimo_core.errors import ModelAuthError
from mimo_core.models.factory import make_model
from testkit.scripted_llm import Reply, turns
from tests.models.helpers import PROTOCOLS, model_for, start_messages

PRICES = PricingConfig(input=2.0, output=10.0, cached_input=0.5)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_usage_and_cost_follow_the_price_table(scripted_llm, protocol):
    scripted_llm.set_responder(
        turns(Reply(content="ok", prompt_tokens=1000, completion_tokens=200, cached_tokens=400, reasoning_tokens=50))
    )
    resp = model_for(scripted_llm, protocol, pricing=PRICES).query(start_messages(), [])
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens, resp.usage.cached_tokens) == (1000, 200, 400)
    if protocol != "anthropic":  # the Messages API does not report reasoning tokens separately
        assert resp.usage.reasoning_tokens == 50
    assert resp.cost == pytest.approx((600 * 2.0 + 400 * 0.5 + 200 * 10.0) / 1e6)
    assert resp.latency_s > 0


def test_cost_is_zero_without_a_price_table(scripted_llm):
    resp = model_for(scripted_llm, "chat", pricing=None).query(start_messages(), [])
    assert resp.cost == 0.0 and resp.usage.prompt_tokens == 10


def test_cached_tokens_cost_the_input_price_when_no_cached_price_is_given(scripted_llm):
    scripted_llm.set_responder(turns(Reply(content="ok", prompt_tokens=100, completion_tokens=0, cached_tokens=50)))
    resp = model_for(scripted_llm, "chat", pricing=PricingConfig(input=1.0)).query(start_messages(), [])
    assert resp.cost == pytest.approx(100 / 1e6)


def test_vllm_token_ids_and_logprobs_are_recorded(scripted_llm):
    scripted_llm.set_responder(turns(Reply(content="ok", prompt_tokens=4, completion_tokens=3, logprobs=True)))
    model = model_for(scripted_llm, "chat", logprobs=True, return_tokens_as_token_ids=True)
    resp = model.query(start_messages(), [])
    assert scripted_llm.requests[0].body["return_tokens_as_token_ids"] is True
    assert resp.token_ids == [1000, 1001, 1002]
    assert resp.prompt_token_ids == [1, 2, 3, 4]
    assert resp.logprobs == pytest.approx([-0.01, -0.02, -0.03])


def test_token_ids_are_read_from_token_id_strings_when_no_id_list_is_sent(scripted_llm):
    from mimo_core.models.chat import ChatModel

    model = model_for(scripted_llm, "chat", logprobs=True, return_tokens_as_token_ids=True)
    assert isinstance(model, ChatModel)
    resp = model.query(start_messages(), [])
    data = {
        "choices": [
            {
                "message": {"role": "assistant", "content": "hi"},
                "finish_reason": "stop",
                "logprobs": {
                    "content": [{"token": "token_id:7", "logprob": -0.5}, {"token": "token_id:9", "logprob": -0.25}]
                },
            }
        ]
    }
    model.parse(data, resp)
    assert resp.token_ids == [7, 9] and resp.logprobs == [-0.5, -0.25]


def test_responses_logprobs_are_recorded(scripted_llm):
    scripted_llm.set_responder(turns(Reply(content="ok", completion_tokens=2, logprobs=True)))
    resp = model_for(scripted_llm, "responses").query(start_messages(), [])
    assert resp.logprobs == pytest.approx([-0.01, -0.02])


def test_raw_response_body_is_kept(scripted_llm):
    resp = model_for(scripted_llm, "chat").query(start_messages(), [])
    assert resp.response["object"] == "chat.completion" and resp.finish_reason == "tool_calls"


def test_missing_api_key_is_an_auth_error_naming_the_model(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelAuthError, match="my-model"):
        make_model(
            ModelConfig(model_name="my-model", protocol="chat", model_kwargs={"base_url": "http://127.0.0.1:9/v1"})
        )


def test_wire_form_is_cached_per_message_and_not_shared_by_copies() -> None:
    from mimo_core.models.chat import message_to_chat
    from mimo_core.models.messages import Message

    m = Message(role="user", content="hi")
    first = m.wire("chat", message_to_chat)
    assert m.wire("chat", message_to_chat) is first
    copy = m.model_copy(update={"content": "changed"})
    assert copy.wire("chat", message_to_chat)["content"] == "changed"
