"""What a rollout page shows, built from the rollout's own files with the project's readers
(`read_trajectory`, the grading models) and never written back: the conversation with each tool call
next to its output, the diff, the verifier's result and per-test outcomes, the judge, timings, usage."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mimo_core.grading.rubric import JudgeResult
from mimo_core.grading.verifier_reports import OutcomeSummary
from mimo_core.models.base import CallRecord
from mimo_core.records.results import ResultRecord
from mimo_core.records.trajectory import Trajectory, read_trajectory

ELIDED = re.compile(r"\[\.\.\. \d+ characters elided \.\.\.\]")  # mimo_core/tools/truncate.py's marker
INLINE_VERIFIER_BYTES = 4096


class Segment(BaseModel):
    text: str
    elided: bool = False  # the tool cut this much out: shown as a marker, never silently


def segments(text: str | None) -> list[Segment]:
    """Split a tool output at the truncation markers, so the page can make them stand out."""
    if not text:
        return []
    out: list[Segment] = []
    pos = 0
    for m in ELIDED.finditer(text):
        out += [Segment(text=text[pos : m.start()]), Segment(text=m.group(0), elided=True)]
        pos = m.end()
    out.append(Segment(text=text[pos:]))
    return [s for s in out if s.text]


class ToolCallView(BaseModel):
    id: str
    name: str
    arguments: str  # pretty JSON when it parses, else the raw text the model produced
    output: list[Segment] | None = None  # None: no tool result in the transcript
    truncated: bool = False


class TurnView(BaseModel):
    role: str
    content: str | None = None
    reasoning: str | None = None
    calls: list[ToolCallView] = []
    call: CallRecord | None = None  # this assistant turn's model call (usage, latency), when they pair up
    step: int | None = None


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments


def conversation(traj: Trajectory) -> list[TurnView]:
    """Messages in order, each tool result folded into the assistant turn whose call it answers."""
    turns: list[TurnView] = []
    pending: dict[str, ToolCallView] = {}
    for m in traj.messages:
        if m.role == "tool" and m.tool_call_id in pending:
            call = pending.pop(m.tool_call_id)
            call.output = segments(m.content)
            call.truncated = any(s.elided for s in call.output)
            continue
        calls = [ToolCallView(id=c.id, name=c.name, arguments=_pretty(c.arguments)) for c in m.tool_calls or []]
        pending.update({c.id: c for c in calls})
        turns.append(TurnView(role=m.role, content=m.content, reasoning=m.reasoning, calls=calls))
    assistant = [t for t in turns if t.role == "assistant"]
    if len(assistant) == len(traj.calls):  # one model call per assistant turn: show its usage beside it
        for turn, record in zip(assistant, traj.calls, strict=True):
            turn.call, turn.step = record, record.step
    return turns


def diff_lines(diff: str | None) -> list[tuple[str, str]]:
    """(css class, line) for a unified diff."""
    out = []
    for line in (diff or "").splitlines():
        if line.startswith(("diff --git", "index ", "+++ ", "--- ", "new file", "deleted file")):
            kind = "meta"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        out.append((kind, line))
    return out


class FileEntry(BaseModel):
    rel: str  # relative to the output folder
    name: str  # relative to the rollout folder
    size: int


def list_files(output_dir: Path, rollout_dir: Path) -> list[FileEntry]:
    entries = []
    for root, dirs, files in os.walk(rollout_dir):
        dirs.sort()
        for f in sorted(files):
            p = Path(root) / f
            try:
                size = p.stat().st_size
            except OSError:
                continue
            entries.append(
                FileEntry(rel=str(p.relative_to(output_dir)), name=str(p.relative_to(rollout_dir)), size=size)
            )
    return entries


class RolloutView(BaseModel):
    record: ResultRecord
    traj: Trajectory | None = None
    problem: str | None = None  # why the trajectory could not be read
    turns: list[TurnView] = []
    diff: list[tuple[str, str]] = []
    extra: dict[str, Any] | None = None  # reward_extra_info.json
    scalars: dict[str, Any] = {}
    texts: dict[str, str] = {}  # long fields of reward_extra_info (verifier output tail, ...)
    tests: OutcomeSummary | None = None
    judge: JudgeResult | None = None
    judge_turns: list[TurnView] = []  # the judge's own conversation (judge/traj.json), its reasoning included
    files: list[FileEntry] = []
    step_files: list[FileEntry] = []  # agent_msgs/ (steps.jsonl; one file per call in older folders), listed apart
    inline: dict[str, str] = {}  # small verifier files shown in the page


def _read_json(path: Path) -> tuple[Any, str | None]:
    try:
        return json.loads(path.read_text()), None
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as e:
        return None, f"{path.name}: cannot read: {e}"


def build_rollout(output_dir: Path, record: ResultRecord) -> RolloutView:
    folder = output_dir / record.output_dir
    files = list_files(output_dir, folder)
    view = RolloutView(
        record=record,
        files=[f for f in files if not f.name.startswith("agent_msgs/")],
        step_files=[f for f in files if f.name.startswith("agent_msgs/")],
    )
    try:
        view.traj = read_trajectory(folder / "traj.json")
        view.turns = conversation(view.traj)
        view.diff = diff_lines(view.traj.submission)
    except ValueError as e:
        view.problem = str(e)
    extra, problem = _read_json(folder / "reward_extra_info.json")
    view.problem = view.problem or problem
    if isinstance(extra, dict):
        view.extra = extra
        tests, judge = extra.get("tests"), extra.get("judge")
        view.tests = OutcomeSummary.model_validate(tests) if isinstance(tests, dict) else None
        view.judge = JudgeResult.model_validate(judge) if isinstance(judge, dict) else None
        if view.judge is not None and view.judge.trajectory:
            try:
                view.judge_turns = conversation(read_trajectory(folder / view.judge.trajectory))
            except ValueError as e:
                view.problem = view.problem or str(e)
        for k, v in extra.items():
            if k in ("tests", "judge"):
                continue
            if isinstance(v, str) and (len(v) > 120 or "\n" in v):
                view.texts[k] = v
            else:
                view.scalars[k] = v if isinstance(v, (str, int, float, bool, type(None))) else json.dumps(v)
    for f in view.files:
        if f.name.startswith("verifier/") and f.size <= INLINE_VERIFIER_BYTES and len(view.inline) < 6:
            try:
                view.inline[f.name] = (output_dir / f.rel).read_text(errors="replace")
            except OSError:
                continue
    return view


class ArmRollout(BaseModel):
    """One rollout in the A/B view: its record, diff and the sequence of actions it took."""

    record: ResultRecord
    actions: list[str] = []
    diff: list[tuple[str, str]] = []
    problem: str | None = None


def arm_rollout(output_dir: Path, record: ResultRecord) -> ArmRollout:
    view = ArmRollout(record=record)
    try:
        traj = read_trajectory(output_dir / record.output_dir / "traj.json")
    except ValueError as e:
        view.problem = str(e)
        return view
    view.diff = diff_lines(traj.submission)
    for m in traj.messages:
        for c in m.tool_calls or []:
            args = c.arguments if len(c.arguments) <= 160 else c.arguments[:160] + "…"
            view.actions.append(f"{c.name} {args}")
    return view
