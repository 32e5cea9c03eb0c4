"""tool_choice in the form each protocol takes, from any protocol's spelling of it, on the wire."""

from __future__ import annotations

import pytest

from mimo_core.models.tool_args import tool_choice_for
from testkit.scripted_llm import call, turns
from tests.models.helpers import BASH, PROTOCOLS, model_for, start_messages

FORCE_BASH = {
    "chat": {"type": "function", "function": {"name": "bash"}},
    "responses": {"type": "function", "name": "bash"},
    "anthropic": {"type": "tool", "name": "bash"},
}
REQUIRED = {"chat": "required", "responses": "required", "anthropic": {"type": "any"}}


@pytest.mark.parametrize("spelling", ["chat", "responses", "anthropic"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_named_tool_choice_is_sent_in_the_protocols_own_form(scripted_llm, protocol: str, spelling: str) -> None:
    scripted_llm.set_responder(turns(call("bash", command="ls")))
    model_for(scripted_llm, protocol, tool_choice=FORCE_BASH[spelling]).query(start_messages(), [BASH])
    assert scripted_llm.requests[-1].body["tool_choice"] == FORCE_BASH[protocol]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_required_and_auto_are_spelt_per_protocol(protocol: str) -> None:
    for given in ("required", {"type": "any"}):
        assert tool_choice_for(protocol, given) == REQUIRED[protocol]
    assert tool_choice_for(protocol, "auto") == ({"type": "auto"} if protocol == "anthropic" else "auto")
