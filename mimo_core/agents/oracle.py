"""The oracle: applies the task's reference solution as a rollout, trajectory and all.

It proves the whole path (sandbox, setup, submission, verifier) before a model is paid for; its short
synthetic trajectory records what it ran and what came back, in the same schema as a model's.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING

from mimo_core.agents.base import AgentContext, AgentResult
from mimo_core.datasets.base import DatasetType, Task
from mimo_core.environments.base import Environment
from mimo_core.grading.reward import tail
from mimo_core.models.messages import Message, ToolCall
from mimo_core.status import ExitStatus

if TYPE_CHECKING:
    from mimo_core.config import MimoConfig


class OracleAgent:
    def __init__(self, dataset_type: DatasetType):
        self.dataset_type = dataset_type

    @classmethod
    def from_config(
        cls, config: MimoConfig, dataset_type: DatasetType, cancel: threading.Event | None = None
    ) -> OracleAgent:
        """How `make_agent` builds every agent plug-in; the oracle needs only the row's dataset type."""
        return cls(dataset_type)

    def _apply(self, task: Task, env: Environment) -> tuple[bool, str, str]:
        """(applied, what was done, log): the gold patch, else the task's solution script."""
        apply_gold = getattr(self.dataset_type, "apply_gold", None)
        gold = self.dataset_type.gold_submission(task)
        if apply_gold is not None:
            ok, log = apply_gold(env, task)
            return ok, "apply the reference patch" if gold else "run the reference solution script", log
        if gold is None:
            return False, "no reference solution", f"{task.instance_id}: the row has no reference solution"
        ok, log = self.dataset_type.apply_submission(env, task, gold)
        return ok, "apply the reference patch", log

    def run(self, task: Task, env: Environment, ctx: AgentContext) -> AgentResult:
        ok, action, log = self._apply(task, env)
        ctx.log(f"oracle: {action}: {'ok' if ok else 'FAILED'}")
        call = ToolCall(id="oracle-1", name="oracle", arguments=json.dumps({"action": action}))
        messages = [
            Message(role="system", content="oracle agent: applies the task's reference solution"),
            Message(role="user", content=task.problem_statement),
            Message(role="assistant", tool_calls=[call]),
            Message(role="tool", tool_call_id=call.id, content=tail(log) or "(no output)"),
        ]
        return AgentResult(
            exit_status=ExitStatus.SUBMITTED if ok else ExitStatus.AGENT_ERROR,
            error=None if ok else f"reference solution did not apply: {tail(log, 500)}",
            messages=messages,
            steps=1,
        )
