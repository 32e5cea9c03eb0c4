"""The `submit` tool: how a tool-calling agent says it is done."""

from __future__ import annotations

from typing import Any

from mimo_core.environments.base import Environment
from mimo_core.models.messages import ToolSchema
from mimo_core.tools.args import check_args
from mimo_core.tools.base import ToolResult

DESCRIPTION = (
    "Finish the task. Call this once, when your work in the working directory is complete: the "
    "current state of the files is what gets evaluated, and no further actions are possible."
)


class SubmitTool:
    def __init__(self, description: str = DESCRIPTION, message_description: str | None = None) -> None:
        self.schema = ToolSchema(
            name="submit",
            description=description,
            parameters={
                "type": "object",
                "properties": {
                    "message": {
                        "type": "string",
                        "description": message_description or "Optional short summary of what you did.",
                    },
                },
                "required": [],
                "additionalProperties": False,
            },
        )

    def run(self, args: dict[str, Any], env: Environment) -> ToolResult:
        """The output carries the message when given, so agents whose result is a text (a judge's
        verdict) can take it from there. `summary` is accepted as an alias models sometimes use."""
        args = dict(args or {})
        if "summary" in args and "message" not in args:
            args["message"] = args.pop("summary")
        check_args("submit", self.schema.parameters, args)
        return ToolResult(output=args.get("message") or "Submitted.", submitted=True)
