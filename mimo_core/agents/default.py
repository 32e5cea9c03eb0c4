"""The default tool-calling agent: one short loop of model ⇄ tools ⇄ environment, with limits.

Every limit ends the rollout with its own exit status, and every model call is handed to the context as it
happens (agent_msgs/), so a killed run still leaves its training samples behind.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from mimo_core.agents.base import AgentContext, AgentResult
from mimo_core.agents.stop import stopped_status
from mimo_core.agents.templates import prompt_cwd, render
from mimo_core.config import AgentConfig, MimoConfig
from mimo_core.datasets.base import DatasetType, Task
from mimo_core.environments.base import Environment
from mimo_core.errors import ModelError, ModelInterrupted, SandboxError
from mimo_core.models.base import CallRecord, Model, Usage
from mimo_core.models.messages import Message, ToolCall
from mimo_core.status import ExitStatus
from mimo_core.tools.base import Tool, ToolError

NO_TOOL_CALL = "Your reply had no tool call. Act by calling one of the tools; call `submit` when the task is done."


class DefaultAgent:
    def __init__(self, config: AgentConfig, model: Model, tools: list[Tool], cancel: threading.Event | None = None):
        self.config = config
        self.model = model
        self.tools = {t.schema.name: t for t in tools}
        self.schemas = [t.schema for t in tools]
        self.cancel = cancel

    @classmethod
    def from_config(
        cls, config: MimoConfig, dataset_type: DatasetType, cancel: threading.Event | None = None
    ) -> DefaultAgent:
        """How `make_agent` builds every agent plug-in: the shared model client and the config's tools."""
        from mimo_core.agents.factory import shared_model
        from mimo_core.tools.registry import build_tools

        tools = build_tools(config.agent.tools, config.environment.timeout, config.agent.observation_max_chars)
        return cls(config.agent, shared_model(config.model), tools, cancel=cancel)

    def initial_messages(self, task: Task, env: Environment) -> list[Message]:
        variables = {**task.template_vars(), "cwd": prompt_cwd(env)}
        return [
            Message(role="system", content=render(self.config.system_template, variables, "agent.system_template")),
            Message(role="user", content=render(self.config.instance_template, variables, "agent.instance_template")),
        ]

    def run(self, task: Task, env: Environment, ctx: AgentContext) -> AgentResult:
        messages = self.initial_messages(task, env)
        state = _LoopState()
        status, error = self._loop(messages, env, ctx, state)
        ctx.log(f"agent finished: {status.value}" + (f" ({error})" if error else ""))
        return AgentResult(
            exit_status=status,
            error=error,
            messages=messages,
            tools=self.schemas,
            calls=state.calls,
            steps=state.steps,
            usage=state.usage,
            cost=state.cost,
        )

    def _limit_reached(self, state: _LoopState) -> ExitStatus | None:
        c = self.config
        if c.step_limit and state.steps >= c.step_limit:
            return ExitStatus.STEP_LIMIT
        if c.cost_limit and state.cost >= c.cost_limit:
            return ExitStatus.COST_LIMIT
        paused = getattr(self.cancel, "paused_s", 0.0)  # waits for the endpoint's budget (agents/stop.py)
        if c.time_limit and time.monotonic() - state.started - paused >= c.time_limit:
            return ExitStatus.TIME_LIMIT
        return stopped_status(self.cancel)

    def _loop(
        self, messages: list[Message], env: Environment, ctx: AgentContext, state: _LoopState
    ) -> tuple[ExitStatus, str | None]:
        while True:
            if (limit := self._limit_reached(state)) is not None:
                return limit, None
            try:
                resp = self.model.query(messages, self.schemas, cancel=self.cancel)
            except ModelError as e:
                if e.request is not None:  # the failing call is evidence too: saved like any other
                    ctx.record_call(state.steps + 1, e.request, e.response or {}, e.request_json)
                return self._model_failure(e, state)
            state.steps += 1
            state.add(resp)
            ctx.record_call(state.steps, resp.request, resp.response, resp.request_json)
            msg = resp.message
            messages.append(msg)
            ctx.log(f"step {state.steps}: {_describe(msg)}")
            if not msg.tool_calls:
                state.format_errors += 1
                messages.append(Message(role="user", content=NO_TOOL_CALL))
            else:
                try:
                    submitted = self._run_calls(msg.tool_calls, messages, env, ctx, state)
                except SandboxError as e:
                    return stopped_status(self.cancel) or e.status, str(e)
                if submitted:
                    return ExitStatus.SUBMITTED, None
            if state.format_errors > self.config.max_format_errors:
                return ExitStatus.FORMAT_ERRORS, f"{state.format_errors} consecutive malformed replies"

    def _model_failure(self, e: ModelError, state: _LoopState) -> tuple[ExitStatus, str]:
        """A model call that failed: a stop (the run's or the time limit's) says so; a refusal of the very
        first request is `request_refused` (the agent never acted: not a 0 to score); else the error's own
        status. The provider's message is in the text either way."""
        if isinstance(e, ModelInterrupted):
            status = stopped_status(self.cancel) or ExitStatus.INTERRUPTED
            if status is ExitStatus.TIME_LIMIT:
                return status, f"agent.time_limit {self.config.time_limit:g}s reached during a model call"
            return status, f"{type(e).__name__}: {e}"
        if state.steps == 0 and e.status in (ExitStatus.CONTEXT_WINDOW, ExitStatus.MODEL_BAD_REQUEST):
            return ExitStatus.REQUEST_REFUSED, f"the endpoint refused the first request ({e.status.value}): {e}"
        return e.status, f"{type(e).__name__}: {e}"

    def _run_calls(
        self,
        calls: list[ToolCall],
        messages: list[Message],
        env: Environment,
        ctx: AgentContext,
        state: _LoopState,
    ) -> bool:
        """Answer every call (protocols require a result per call id); True once `submit` was called."""
        submitted = False
        malformed = False
        for call in calls:
            output, done, bad = self._run_one(call, env)
            malformed |= bad
            submitted |= done
            ctx.log(f"  {call.name} -> {output[:200]!r}")
            note = getattr(ctx, "note_tool_call", None)  # (a context of your own may not watch)
            if note is not None:
                note(state.steps, call.name, call.arguments, output)
            messages.append(Message(role="tool", tool_call_id=call.id, name=call.name, content=output))
        state.format_errors = state.format_errors + 1 if malformed else 0
        return submitted

    def _run_one(self, call: ToolCall, env: Environment) -> tuple[str, bool, bool]:
        """Returns (observation, submitted, malformed)."""
        tool = self.tools.get(call.name)
        if tool is None:
            return f"Error: unknown tool {call.name!r}. Available tools: {sorted(self.tools)}.", False, True
        try:
            # strict=False: grammar-constrained servers emit raw newlines inside JSON strings.
            args = json.loads(call.arguments, strict=False) if call.arguments.strip() else {}
        except json.JSONDecodeError as e:
            return (
                f"Error: the arguments of {call.name} are not valid JSON: {_where(e)}. Send a JSON object.",
                False,
                True,
            )
        if not isinstance(args, dict):
            return f"Error: the arguments of {call.name} must be a JSON object.", False, True
        try:
            result = tool.run(args, env)
        except ToolError as e:
            return f"Error: {e}", False, False
        return result.output, result.submitted, False


class _LoopState:
    __slots__ = ("steps", "cost", "usage", "calls", "format_errors", "started")

    def __init__(self) -> None:
        self.steps = 0
        self.cost = 0.0
        self.usage = Usage()
        self.calls: list[CallRecord] = []
        self.format_errors = 0
        self.started = time.monotonic()

    def add(self, resp: Any) -> None:
        u = resp.usage
        self.usage = self.usage + u
        self.cost += resp.cost
        self.calls.append(
            CallRecord(
                step=self.steps,
                usage=u,
                latency_s=resp.latency_s,
                cost=resp.cost,
                attempts=resp.attempts,
                wait_s=getattr(resp, "wait_s", 0.0),
                finish_reason=resp.finish_reason,
                token_ids=resp.token_ids,
                prompt_token_ids=resp.prompt_token_ids,
                logprobs=resp.logprobs,
            )
        )


def _where(e: json.JSONDecodeError) -> str:
    """The parse error with its place: line, column and the text around it."""
    near = e.doc[max(e.pos - 20, 0) : e.pos + 20]
    return f"{e.msg} at line {e.lineno} column {e.colno} (near {near!r})"


def _describe(msg: Message) -> str:
    if msg.tool_calls:
        return ", ".join(f"{c.name}({c.arguments[:160]})" for c in msg.tool_calls)
    return f"text only: {(msg.content or '')[:160]!r}"
