"""The Tool seam: a JSON-schema'd function the model calls, acting through an Environment."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel

from mimo_core.environments.base import Environment
from mimo_core.models.messages import ToolSchema


class ToolError(Exception):
    """A tool call the model got wrong (bad arguments, no match for edit). Returned to the model as text."""


class ToolResult(BaseModel):
    output: str
    submitted: bool = False  # the submit tool ends the rollout
    returncode: int | None = None


class Tool(Protocol):
    schema: ToolSchema

    def run(self, args: dict[str, Any], env: Environment) -> ToolResult:
        """Raise ToolError for a mistake the model should see and correct."""
        ...
