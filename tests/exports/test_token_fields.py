"""Token ids in each server family's spelling, recognised from the reply itself (fixtures/README.md says
where each body came from), and the rl export's account of what a rollout lacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mimo_core.models.token_ids import PROMPT_IDS_KEY, token_fields

FIXTURES = Path(__file__).with_name("fixtures")


def _body(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def test_vllm_token_ids_and_prompt_ids() -> None:
    f = token_fields(_body("vllm_chat_return_token_ids.json"))
    assert (f.server, f.completion_ids, f.prompt_ids) == ("vllm", [9707, 1052, 13], [151644, 872, 198, 9707, 151645])
    assert f.logprobs == [-0.41, -1.02, -0.07] and f.missing() == []


def test_older_vllm_gives_completion_ids_from_logprob_tokens_only() -> None:
    f = token_fields(_body("vllm_chat_tokens_as_ids_only.json"))
    assert (f.server, f.completion_ids, f.prompt_ids) == ("vllm", [13048, 13], None)
    assert f.missing() == ["prompt token ids"]


def test_sglang_choice_token_ids_prompt_ids_and_meta_info() -> None:
    f = token_fields(_body("sglang_chat_token_ids_meta_info.json"))
    assert (f.server, f.completion_ids, f.prompt_ids) == (
        "sglang",
        [4913, 5631],
        [151644, 872, 198, 852, 279, 3542, 151645],
    )
    assert f.logprobs == [-0.12, -0.03]


def test_sglang_ids_from_meta_info_output_token_logprobs() -> None:
    f = token_fields(_body("sglang_chat_meta_info_only.json"))
    assert (f.server, f.completion_ids, f.prompt_ids, f.logprobs) == (
        "sglang",
        [17453, 13],
        [151644, 872, 198, 151645],
        [-0.5, -0.01],
    )


def test_llama_cpp_completion_ids_and_the_prompt_ids_it_lacks() -> None:
    body = _body("llama_cpp_chat_logprobs.json")
    f = token_fields(body)
    assert f.server == "llama.cpp" and f.completion_ids == [e["id"] for e in body["choices"][0]["logprobs"]["content"]]
    assert len(f.completion_ids) == body["usage"]["completion_tokens"]
    assert f.prompt_ids is None and f.missing() == ["prompt token ids"] and "/tokenize" in (f.prompt_error or "")
    withprompt = token_fields({**body, PROMPT_IDS_KEY: list(range(body["usage"]["prompt_tokens"]))})
    assert withprompt.missing() == [] and withprompt.server == "llama.cpp"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"choices": []},
        {"choices": [{"message": {"content": "hi"}}]},
        {"choices": [{"logprobs": {"content": [{"token": "hi", "logprob": -1}]}}]},
    ],
)
def test_a_reply_without_ids_has_none(body: dict) -> None:
    assert token_fields(body).missing() == ["prompt token ids", "completion token ids"]
