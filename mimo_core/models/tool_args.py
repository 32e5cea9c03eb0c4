"""Tool-call arguments as they go back to a server in the history: valid JSON, whatever the model wrote.

Models write arguments leniently (raw newlines inside strings, which grammar-constrained servers emit), or
not at all (a call cut off at the token cap, `finish_reason: length`). Strict servers parse every earlier
call's arguments on each request (llama.cpp answers HTTP 500 "Failed to parse tool call arguments as
JSON"; vLLM and SGLang hand them to the chat template as objects), so the raw text would fail every later
request of the rollout. The history carries a canonical re-serialisation of what was parsed instead; text
that is no JSON object at all goes as `{"_raw": text}` (the form the Anthropic protocol already sends).
traj.json keeps the text the model wrote.
"""

from __future__ import annotations

import json
from typing import Any

RAW_KEY = "_raw"


def parse_arguments(text: str) -> dict[str, Any] | None:
    """The arguments as an object (lenient about control characters in strings), or None."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text, strict=False)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def canonical_arguments(text: str) -> str:
    """JSON text every server parses: the same object re-encoded, or the raw text under `_raw`."""
    value = parse_arguments(text)
    if value is None:
        value = {RAW_KEY: text}
    return json.dumps(value, ensure_ascii=False)


def arguments_object(text: str) -> dict[str, Any]:
    """For protocols whose history carries arguments as an object (Anthropic's tool_use `input`)."""
    value = parse_arguments(text)
    return value if value is not None else {RAW_KEY: text}


def _named(value: Any) -> str | None:
    """The function a tool_choice object forces, in any protocol's spelling."""
    if not isinstance(value, dict):
        return None
    fn = value.get("function")
    name = fn.get("name") if isinstance(fn, dict) else value.get("name")
    return name if isinstance(name, str) and value.get("type") in ("function", "tool") else None


def tool_choice_for(protocol: str, value: Any) -> Any:
    """`model_kwargs.tool_choice` in the form `protocol` takes, from any protocol's spelling of it, so one
    profile works everywhere: "auto" | "none" | "required" (Anthropic: {"type": "any"}), or one named
    function. Unknown forms pass as given. llama.cpp's server ignores the object form (it logs a type
    error and samples as "auto"): force a call there with "required" (docs/models.md)."""
    if isinstance(value, dict) and value.get("type") in ("auto", "none", "any"):
        value = "required" if value["type"] == "any" else value["type"]
    name = _named(value)
    if protocol == "anthropic":
        if name is not None:
            return {"type": "tool", "name": name}
        if value in ("auto", "none"):
            return {"type": value}
        return {"type": "any"} if value == "required" else value
    if name is not None:
        return (
            {"type": "function", "name": name}
            if protocol == "responses"
            else {"type": "function", "function": {"name": name}}
        )
    return value
