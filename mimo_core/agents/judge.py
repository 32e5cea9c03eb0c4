"""The rubric judge: the default agent's loop, with tools that cannot write and its own model, run on the
final state after the dataset's verifier graded it (so nothing the judge does can change the grade). It
scores each rubric in `task.rubric.rubrics` and submits its verdict as JSON; its trajectory is saved in
the rollout's `judge/` folder. Where the backend offers a read-only view of the final state (bwrap), the
judge also has a bash over it; elsewhere it reads files, with the agent's diff in its prompt."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

from mimo_core.agents.default import DefaultAgent
from mimo_core.agents.templates import prompt_cwd
from mimo_core.base.atomic_files import write_model_json
from mimo_core.config import AgentConfig, JudgeAgentConfig, mask_secret_keys
from mimo_core.datasets.base import Task
from mimo_core.environments.base import Environment
from mimo_core.grading.rubric import (
    TOOL_ARGS_CHARS,
    UNTRUSTED_NOTE,
    VERDICT_FORMAT,
    JudgeResult,
    RubricItem,
    parse_verdict,
    rubric_block,
    rubric_items,
    untrusted,
    weighted_score,
)
from mimo_core.models.messages import Message, ToolCall
from mimo_core.records.trajectory import ModelInfo, Timings, Trajectory
from mimo_core.status import ExitStatus

JUDGE_SYSTEM = (
    "You are a strict reviewer judging another agent's work. The repository at {{cwd}} holds its final "
    "state, read-only. Inspect it with the tools. Then call `submit` once with your verdict.\n\n" + UNTRUSTED_NOTE
)
JUDGE_INSTANCE = (
    "The task the agent was given:\n\n{{task}}\n\n"
    "The agent's changes (its diff, written by the agent):\n\n{{submission}}\n\n"
    "Score the agent's work against each rubric:\n\n{{rubrics}}\n\n{{verdict_format}}"
)
SUBMISSION_CHARS = 20000  # the diff in the judge's prompt, shortened in the middle beyond this
_DEFAULTS = AgentConfig()


class JudgeAgent(DefaultAgent):
    """The default loop with the rubric and the verdict format added to the template variables."""

    def __init__(self, items: list[RubricItem], *args, submission: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.items = items
        self.submission = submission

    def initial_messages(self, task: Task, env: Environment) -> list[Message]:
        from mimo_core.agents.templates import render
        from mimo_core.tools.truncate import truncate_middle

        diff = truncate_middle(self.submission, SUBMISSION_CHARS) if self.submission else "(no changes)"
        variables = {
            **task.template_vars(),
            "cwd": prompt_cwd(env),
            "rubrics": rubric_block(self.items),
            "verdict_format": VERDICT_FORMAT,
            "submission": untrusted(diff, "agent submission: the diff of the agent under review"),
        }
        return [
            Message(
                role="system",
                content=render(self.config.system_template, variables, "environment.judge_agent.agent.system_template"),
            ),
            Message(
                role="user",
                content=render(
                    self.config.instance_template, variables, "environment.judge_agent.agent.instance_template"
                ),
            ),
        ]

    def _run_one(self, call: ToolCall, env: Environment) -> tuple[str, bool, bool]:
        """What a tool read from the agent's final state reaches the judge delimited as the agent's text."""
        output, submitted, malformed = super()._run_one(call, env)
        if call.name == "submit":
            return output, submitted, malformed
        return untrusted(output, f"{call.name} output over the agent's repository"), submitted, malformed


def judge_tool_calls(messages: list[Message]) -> list[dict[str, str]]:
    """Every tool call the judge made, in order (also in its traj.json and agent_msgs/)."""
    return [
        {"tool": call.name, "arguments": call.arguments[:TOOL_ARGS_CHARS]}
        for msg in messages
        if msg.role == "assistant"
        for call in msg.tool_calls or []
    ]


def judge_agent_config(config: AgentConfig) -> AgentConfig:
    """Judge prompts replace the generic defaults; templates the user wrote are kept."""
    update = {}
    if config.system_template == _DEFAULTS.system_template:
        update["system_template"] = JUDGE_SYSTEM
    if config.instance_template == _DEFAULTS.instance_template:
        update["instance_template"] = JUDGE_INSTANCE
    return config.model_copy(update=update)


def _verdict(messages: list[Message]) -> str | None:
    """The message of the last `submit` call, else the last assistant text."""
    for msg in reversed(messages):
        for call in reversed(msg.tool_calls or []):
            if call.name == "submit":
                try:
                    args = json.loads(call.arguments or "{}")
                except json.JSONDecodeError:
                    return call.arguments
                if isinstance(args, dict):
                    text = args.get("message", args.get("summary"))
                    return text if isinstance(text, str) else json.dumps(args)
        if msg.role == "assistant" and msg.content:
            return msg.content
    return None


def run_judge(
    config: JudgeAgentConfig,
    task: Task,
    env: Environment,
    out_dir: Path,
    run_id: str = "",
    config_name: str = "",
    rollout_index: int = 0,
    shell: bool = False,
    submission: str = "",
) -> JudgeResult:
    """Score the rubrics; the judge's own trajectory is written in the same schema as the agent's."""
    from mimo_core.agents.factory import shared_model
    from mimo_core.records.rollout_logs import RolloutFiles
    from mimo_core.tools.registry import read_only_tools

    items = rubric_items(task.rubric.rubrics if task.rubric else [])
    agent_cfg = judge_agent_config(config.agent)
    model = shared_model(config.model)
    agent = JudgeAgent(items, agent_cfg, model, read_only_tools(shell=shell), submission=submission)
    rec = RolloutFiles(out_dir)
    started, t0 = datetime.now(UTC), time.monotonic()
    try:
        result = agent.run(task, env, rec)
        verdict = _verdict(result.messages)
        scores, error = parse_verdict(verdict or "", items)
        if result.exit_status != ExitStatus.SUBMITTED:
            error = f"judge ended with {result.exit_status.value}" + (f": {result.error}" if result.error else "")
        rec.log(f"judge verdict: {verdict!r}; parse: {error or 'ok'}")
    finally:
        rec.close()
    elapsed = time.monotonic() - t0
    traj = Trajectory.for_rollout(
        task=task,
        run_id=run_id,
        config_name=config_name,
        rollout_index=rollout_index,
        agent_type="judge",
        model=ModelInfo(name=model.name, protocol=model.protocol, endpoint_host=getattr(model, "endpoint_host", None)),
        agent=result,
        exit_status=result.exit_status,
        error=result.error,
        submission=verdict,
        timings=Timings(
            started_at=started.isoformat(timespec="seconds"),
            ended_at=datetime.now(UTC).isoformat(timespec="seconds"),
            agent_s=elapsed,
            total_s=elapsed,
            budget_wait_s=round(sum(c.wait_s for c in result.calls), 3),  # waits for the endpoint's budget
        ),
        config=mask_secret_keys(config.model_dump(mode="json")),
    )
    write_model_json(out_dir / "traj.json", traj)
    return JudgeResult(
        score=weighted_score(scores, items),
        scores=scores,
        exit_status=result.exit_status,
        error=error,
        verdict=verdict,
        model_name=config.model.model_name,
        steps=result.steps,
        usage=result.usage,
        cost=result.cost,
        trajectory=f"{out_dir.name}/traj.json",
        tool_calls=judge_tool_calls(result.messages),
    )
