"""What the scripted model says on one turn (`Reply`), and the parts of it every rendering shares: the
arguments text of a tool call and a thinking block's signature. Kept apart from the server and the
renderers so each of them imports it, and none of them imports another's caller."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    """What the scripted model says on one turn."""

    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    reasoning: str | None = None
    raw_arguments: dict[int, str] | None = None  # call index -> raw (possibly malformed) argument text
    prompt_tokens: int = 10
    completion_tokens: int = 5
    logprobs: bool = False
    cached_tokens: int = 0  # of prompt_tokens
    reasoning_tokens: int = 0  # of completion_tokens
    cache_write_tokens: int = 0  # of prompt_tokens (Anthropic's cache_creation_input_tokens)


def call(name: str, **args: Any) -> Reply:
    """A reply that makes a single tool call."""
    return Reply(tool_calls=[(name, args)])


def signature_for(thinking: str) -> str:
    """The signature the server gives a thinking block; replaying any other one is rejected like Anthropic does."""
    return "sig-" + hashlib.sha256(thinking.encode()).hexdigest()[:24]


def arguments(reply: Reply, i: int, args: dict[str, Any]) -> str:
    if reply.raw_arguments and i in reply.raw_arguments:
        return reply.raw_arguments[i]
    return json.dumps(args)
