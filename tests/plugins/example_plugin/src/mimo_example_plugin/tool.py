"""A tool: `shout` returns its text in capitals, with the suffix its config names and the sandbox it ran in.

A tool plug-in is a class with a `schema` and `run(args, env)`; its `config_model` checks the `config:` of
its `tools:` entry at config load, and `from_config` builds it (without them: no keys, and `cls()`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from mimo_core.environments.base import Environment
from mimo_core.models.messages import ToolSchema
from mimo_core.tools.base import ToolError, ToolResult


class ShoutConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    suffix: str = "!"


class ShoutTool:
    config_model = ShoutConfig

    @classmethod
    def from_config(cls, config: ShoutConfig, default_timeout: float | None, observation_max_chars: int) -> ShoutTool:
        return cls(config.suffix)

    def __init__(self, suffix: str = "!") -> None:
        self.suffix = suffix
        self.schema = ToolSchema(
            name="shout",
            description="Say the text louder.",
            parameters={
                "type": "object",
                "properties": {"text": {"type": "string", "description": "What to shout."}},
                "required": ["text"],
                "additionalProperties": False,
            },
        )

    def run(self, args: dict[str, Any], env: Environment) -> ToolResult:
        text = args.get("text")
        if not isinstance(text, str):
            raise ToolError("shout needs a string `text`")
        return ToolResult(output=f"{text.upper()}{self.suffix} (in {type(env).__name__})")
