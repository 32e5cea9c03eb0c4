"""`atif`: one ATIF file per rollout (Harbor's Agent Trajectory Interchange Format), so Harbor's tools
and other ATIF readers can read our trajectories.

A system or user message is a step of that source; an assistant message is an `agent` step with its
reasoning, tool calls and the call's metrics (tokens, cost, and token ids/logprobs when the endpoint
returned them); the tool results that answer it become that step's observation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mimo_core.base.atomic_files import atomic_write_text
from mimo_core.exports.atif_models import (
    AtifAgent,
    AtifFinalMetrics,
    AtifMetrics,
    AtifObservation,
    AtifObservationResult,
    AtifStep,
    AtifToolCall,
    AtifTrajectory,
)
from mimo_core.exports.report import ExportReport
from mimo_core.exports.source import RolloutRef
from mimo_core.models.base import CallRecord
from mimo_core.models.messages import Message, ToolCall
from mimo_core.records.trajectory import Trajectory, read_trajectory

FOLDER = "atif"


def _tool_call(c: ToolCall) -> AtifToolCall:
    try:
        args = json.loads(c.arguments) if c.arguments.strip() else {}
    except ValueError:
        args = None
    if isinstance(args, dict):
        return AtifToolCall(tool_call_id=c.id, function_name=c.name, arguments=args)
    return AtifToolCall(
        tool_call_id=c.id, function_name=c.name, arguments={}, extra={"raw_arguments": c.arguments}
    )  # malformed: kept as the model wrote it


def _metrics(call: CallRecord | None) -> AtifMetrics | None:
    if call is None:
        return None
    u = call.usage
    return AtifMetrics(
        prompt_tokens=u.prompt_tokens,
        completion_tokens=u.completion_tokens,
        cached_tokens=u.cached_tokens,
        cost_usd=call.cost,
        prompt_token_ids=call.prompt_token_ids,
        completion_token_ids=call.token_ids,
        logprobs=call.logprobs,
        extra={
            "reasoning_tokens": u.reasoning_tokens,
            "latency_s": call.latency_s,
            "attempts": call.attempts,
            "finish_reason": call.finish_reason,
            "step": call.step,
        },
    )


def _agent_step(m: Message, step_id: int, model: str | None, call: CallRecord | None) -> AtifStep:
    return AtifStep(
        step_id=step_id,
        source="agent",
        message=m.content or "",
        model_name=model,
        reasoning_content=m.reasoning,
        tool_calls=[_tool_call(c) for c in m.tool_calls or ()] or None,
        metrics=_metrics(call),
    )


def to_atif(traj: Trajectory, ref: RolloutRef) -> AtifTrajectory:
    """Raises ValueError when the trajectory has no message (the rollout ended before the agent ran)."""
    n_assistant = sum(1 for m in traj.messages if m.role == "assistant")
    aligned = len(traj.calls) == n_assistant  # calls ↔ assistant messages, one each (the default agent)
    model = traj.model.name if traj.model else None
    steps: list[AtifStep] = []
    agent_turn = 0
    for m in traj.messages:
        if m.role == "assistant":
            call = traj.calls[agent_turn] if aligned else None
            steps.append(_agent_step(m, len(steps) + 1, model, call))
            agent_turn += 1
        elif m.role == "tool" and steps and steps[-1].source == "agent":
            last = steps[-1]
            ids = {c.tool_call_id for c in last.tool_calls or ()}
            result = AtifObservationResult(
                source_call_id=m.tool_call_id if m.tool_call_id in ids else None, content=m.content
            )
            if last.observation is None:
                last.observation = AtifObservation(results=[])
            last.observation.results.append(result)
        else:  # system, user (and a tool result with no agent step before it, kept as what the agent was told)
            steps.append(
                AtifStep(
                    step_id=len(steps) + 1,
                    source="system" if m.role == "system" else "user",
                    message=m.content or "",
                    extra={"role": m.role} if m.role == "tool" else None,
                )
            )
    if not steps:
        raise ValueError(f"no messages (the rollout ended {traj.exit_status.value} before the agent ran)")
    rec = ref.record
    extra: dict[str, Any] = {
        "instance_id": traj.instance_id,
        "config_name": traj.config_name,
        "rollout_index": traj.rollout_index,
        "dataset_type": traj.dataset_type,
        "agent_type": traj.agent_type,
        "exit_status": traj.exit_status.value,
        "error": traj.error,
        "reward": rec.reward,
        "passed": rec.passed,
        "submission": traj.submission,
    }
    return AtifTrajectory(
        session_id=traj.run_id,
        trajectory_id=f"{traj.run_id}/{rec.output_dir}",
        agent=AtifAgent(
            name="mimoagent",
            version=traj.framework_version,
            model_name=model,
            tool_definitions=[t.to_openai() for t in traj.tools] or None,
            extra={"agent_type": traj.agent_type, "config_name": traj.config_name},
        ),
        steps=steps,
        notes=None
        if aligned
        else (
            f"{len(traj.calls)} model calls for {n_assistant} agent messages: "
            "per-step metrics left out, totals in final_metrics"
        ),
        final_metrics=AtifFinalMetrics(
            total_prompt_tokens=traj.usage.prompt_tokens,
            total_completion_tokens=traj.usage.completion_tokens,
            total_cached_tokens=traj.usage.cached_tokens,
            total_cost_usd=traj.cost,
            total_steps=len(steps),
            extra={"model_calls": len(traj.calls), "reasoning_tokens": traj.usage.reasoning_tokens},
        ),
        extra=extra,
    )


def export_atif(refs: list[RolloutRef], dest: Path, flt: object = None) -> ExportReport:
    folder = dest / FOLDER
    report = ExportReport(format="atif", path=str(folder))
    written: set[Path] = set()
    for ref in refs:
        path = folder / f"{ref.record.output_dir}.json"
        if path in written:
            report.skip(ref.name, f"{path} was already written for the same rollout of another output folder")
            continue
        try:
            atif = to_atif(read_trajectory(ref.folder / "traj.json"), ref)
        except ValueError as e:
            report.skip(ref.name, str(e))
            continue
        atomic_write_text(path, atif.model_dump_json(exclude_none=True, indent=1) + "\n", durable=False)
        written.add(path)
    report.rollouts = report.rows = len(written)
    return report
