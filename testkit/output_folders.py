"""A generated output folder of any size (results.jsonl, traj.json, reward_extra_info.json per rollout),
written with the real schema models, for the viewer's bench (10,000 rollouts) and tests (a few)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from mimo_core.grading.rubric import JudgeResult, RubricScore
from mimo_core.grading.verifier_reports import OutcomeGroup, OutcomeSummary
from mimo_core.models.base import CallRecord, Usage
from mimo_core.models.messages import Message, ToolCall, ToolSchema
from mimo_core.records.results import RESULTS_FILE, ResultRecord
from mimo_core.records.trajectory import ModelInfo, Timings, Trajectory
from mimo_core.status import ExitStatus

STATUSES = [ExitStatus.SUBMITTED] * 6 + [ExitStatus.STEP_LIMIT, ExitStatus.MODEL_ERROR, ExitStatus.GRADING_ERROR]
DIFF = (
    "diff --git a/greeting.txt b/greeting.txt\n--- a/greeting.txt\n+++ b/greeting.txt\n@@ -1 +1 @@\n-hello\n+goodbye\n"
)


def trajectory(
    instance_id: str,
    config: str,
    k: int,
    steps: int,
    status: ExitStatus,
    output_chars: int = 800,
) -> Trajectory:
    """A default-agent transcript of `steps` bash calls, each answered by an output of `output_chars`."""
    messages = [
        Message(role="system", content="You are an agent, your current working directory is /testbed."),
        Message(role="user", content=f"Fix the following issue:\n\nMake the greeting say goodbye ({instance_id})."),
    ]
    calls = []
    for step in range(1, steps + 1):
        cid = f"call_{step}"
        args = json.dumps({"command": f"ls -la dir{step}"})
        messages.append(
            Message(
                role="assistant",
                content=f"Step {step}: look around.",
                reasoning=f"thinking {step}",
                tool_calls=[ToolCall(id=cid, name="bash", arguments=args)],
            )
        )
        body = (f"total {step}\n" + "-rw-r--r-- 1 root root 6 file.txt\n" * (output_chars // 36 + 1))[:output_chars]
        messages.append(Message(role="tool", content=body, tool_call_id=cid, name="bash"))
        calls.append(
            CallRecord(
                step=step, usage=Usage(prompt_tokens=1000 + 40 * step, completion_tokens=30), latency_s=0.5, cost=0.001
            )
        )
    usage = Usage(prompt_tokens=sum(c.usage.prompt_tokens for c in calls), completion_tokens=30 * steps)
    return Trajectory(
        framework_version="generated",
        run_id="generated",
        instance_id=instance_id,
        dataset_type="generic",
        config_name=config,
        rollout_index=k,
        agent_type="default",
        model=ModelInfo(name=config, protocol="chat"),
        tools=[ToolSchema(name="bash", description="Run a command", parameters={"type": "object"})],
        messages=messages,
        calls=calls,
        exit_status=status,
        agent_exit_status=status,
        submission=DIFF if status == ExitStatus.SUBMITTED else None,
        steps=steps,
        usage=usage,
        cost=0.001 * steps,
        timings=Timings(started_at="2026-01-01T00:00:00Z", agent_s=steps * 0.5, total_s=steps * 0.5 + 2),
    )


def write_agent_msgs(folder: Path, traj: Trajectory) -> None:
    """`agent_msgs/` for the trajectory's calls, each response as vLLM sends it when asked for token ids
    and logprobs (scripted_vllm.py): what the RL export reads."""
    from mimo_core.records.model_calls import StepWriter
    from testkit.scripted_vllm import vllm_training_fields

    writer = StepWriter(folder / "agent_msgs")
    (folder / "agent_msgs").mkdir(parents=True, exist_ok=True)
    wire = [m.to_openai(wire=True) for m in traj.messages]
    asks = {"logprobs": True, "return_tokens_as_token_ids": True, "return_token_ids": True}
    step = 0
    for i, m in enumerate(traj.messages):
        if m.role != "assistant":
            continue
        step += 1
        request = {"model": traj.config_name, "messages": wire[:i], **asks}
        choice = {"index": 0, "message": wire[i], "finish_reason": "tool_calls"}
        response = {"id": f"chatcmpl-{step}", "object": "chat.completion", "choices": [choice], "usage": {}}
        vllm_training_fields(choice, response, request)
        writer.record(step, request, response)


def write_output_folder(
    out: Path,
    rollouts: int,
    configs: tuple[str, ...] = ("a", "b"),
    steps: int = 3,
    long_steps: int = 250,
    seed: int = 0,
    token_ids: bool = False,
    start: int = 0,
) -> Path:
    """`rollouts` rollouts over instances `inst-<i>` × `configs`; the first rollout has `long_steps` steps.
    `token_ids`: each rollout also gets agent_msgs/ with vLLM token ids. `start` > 0: the rollouts numbered
    from `start` on (the instances after those of a folder of `start` rollouts), appended to its
    results.jsonl. Returns the first rollout's folder."""
    rng = random.Random(seed + start)
    lines = []
    first: Path | None = None
    for n in range(start, start + rollouts):
        instance_id, config = f"inst-{n // len(configs):05d}", configs[n % len(configs)]
        status = ExitStatus.SUBMITTED if n == 0 else rng.choice(STATUSES)
        rel = f"{instance_id}/{config}/0"
        folder = out / rel
        folder.mkdir(parents=True, exist_ok=True)
        traj = trajectory(instance_id, config, 0, long_steps if n == 0 else steps, status)
        (folder / "traj.json").write_text(json.dumps(traj.model_dump(mode="json")))
        if token_ids:
            write_agent_msgs(folder, traj)
        graded = status not in (ExitStatus.MODEL_ERROR, ExitStatus.GRADING_ERROR)
        reward = (1.0 if rng.random() < 0.5 else 0.0) if graded else None
        extra = {"reward": reward, "f2p": reward}
        if n == 0:  # the long rollout also has per-test outcomes and a judge's verdict
            extra["tests"] = OutcomeSummary(
                source=["verifier/ctrf.json"],
                f2p=OutcomeGroup(passed=["test_goodbye"]),
                p2p=OutcomeGroup(failed=["test_hello_kept"]),
            ).model_dump()
            judge = trajectory(instance_id, "judge", 0, 1, ExitStatus.SUBMITTED)
            judge.agent_type, judge.messages[2].reasoning = "judge", "weighing rubric 2 against the diff"
            (folder / "judge").mkdir()
            (folder / "judge" / "traj.json").write_text(json.dumps(judge.model_dump(mode="json")))
            extra["judge"] = JudgeResult(
                score=0.5,
                exit_status=ExitStatus.SUBMITTED,
                verdict="1: yes; 2: no",
                trajectory="judge/traj.json",
                scores=[
                    RubricScore(index=1, rubric="says goodbye", score=1.0, reason="the file says goodbye"),
                    RubricScore(index=2, rubric="keeps hello", score=0.0, reason="hello is gone"),
                ],
            ).model_dump(mode="json")
        (folder / "reward_extra_info.json").write_text(json.dumps(extra))
        lines.append(
            ResultRecord(
                run_id="generated",
                instance_id=instance_id,
                config_name=config,
                model_name=config,
                exit_status=status,
                error=None if graded else f"{status}: generated",
                reward=reward,
                passed=None if reward is None else reward == 1.0,
                steps=traj.steps,
                prompt_tokens=traj.usage.prompt_tokens,
                completion_tokens=traj.usage.completion_tokens,
                cost=traj.cost,
                duration_s=traj.timings.total_s,
                output_dir=rel,
            ).model_dump_json()
        )
        first = first or folder
    with open(out / RESULTS_FILE, "a" if start else "w") as fh:
        fh.write("".join(line + "\n" for line in lines))
    assert first is not None
    return first
