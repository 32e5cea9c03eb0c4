"""An agent: the smallest loop that works. Ask the model, run each tool it calls, stop at `submit` or at
`agent.step_limit`.

An agent plug-in is a class with `from_config(config, dataset_type, cancel)` returning an object with
`run(task, env, ctx) -> AgentResult` (mimo_core/agents/base.py). Every model call goes to
`ctx.record_call`, so `agent_msgs/` holds it as it holds the default agent's; the tool calls in the
messages it returns are what the containment checks read (mimo_core/containment/).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from mimo_core.agents.base import AgentContext, AgentResult
from mimo_core.agents.factory import shared_model
from mimo_core.config import MimoConfig
from mimo_core.datasets.base import DatasetType, Task
from mimo_core.environments.base import Environment
from mimo_core.errors import ModelError
from mimo_core.models.base import Model, Usage
from mimo_core.models.messages import Message
from mimo_core.status import ExitStatus
from mimo_core.tools.base import Tool, ToolError
from mimo_core.tools.registry import build_tools

SYSTEM = "You are the tiny-loop agent. Act only through the tools; call submit when the task is done."


class TinyLoopAgent:
    def __init__(self, model: Model, tools: list[Tool], step_limit: int, cancel: threading.Event | None) -> None:
        self.model, self.step_limit, self.cancel = model, step_limit, cancel
        self.tools = {t.schema.name: t for t in tools}

    @classmethod
    def from_config(
        cls, config: MimoConfig, dataset_type: DatasetType, cancel: threading.Event | None = None
    ) -> TinyLoopAgent:
        tools = build_tools(config.agent.tools, config.environment.timeout, config.agent.observation_max_chars)
        return cls(shared_model(config.model), tools, config.agent.step_limit, cancel)

    def run(self, task: Task, env: Environment, ctx: AgentContext) -> AgentResult:
        messages = [Message(role="system", content=SYSTEM), Message(role="user", content=task.problem_statement)]
        schemas = [t.schema for t in self.tools.values()]
        usage, steps = Usage(), 0
        status, error = ExitStatus.STEP_LIMIT, None
        while not self.step_limit or steps < self.step_limit:
            try:
                resp = self.model.query(messages, schemas, cancel=self.cancel)
            except ModelError as e:
                status, error = e.status, str(e)
                break
            steps += 1
            usage = Usage(
                prompt_tokens=usage.prompt_tokens + resp.usage.prompt_tokens,
                completion_tokens=usage.completion_tokens + resp.usage.completion_tokens,
            )
            ctx.record_call(steps, resp.request, resp.response, resp.request_json)
            messages.append(resp.message)
            submitted = False
            for call in resp.message.tool_calls or []:
                output, done = self._run(call.name, call.arguments, env)
                messages.append(Message(role="tool", tool_call_id=call.id, name=call.name, content=output))
                submitted |= done
            if submitted:
                status = ExitStatus.SUBMITTED
                break
        ctx.log(f"tiny-loop: {status.value} after {steps} steps")
        return AgentResult(exit_status=status, error=error, messages=messages, tools=schemas, steps=steps, usage=usage)

    def _run(self, name: str, arguments: str, env: Environment) -> tuple[str, bool]:
        tool = self.tools.get(name)
        if tool is None:
            return f"Error: no tool {name!r}", False
        try:
            args: Any = json.loads(arguments or "{}")
            result = tool.run(args, env)
        except (ValueError, ToolError) as e:
            return f"Error: {e}", False
        return result.output, result.submitted
