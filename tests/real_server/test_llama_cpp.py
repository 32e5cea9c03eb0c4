"""Rollouts against a real llama.cpp server: the default agent on chat and on responses, an interrupted
call, a context overflow, and both training exports. The protocol is asserted, not the (135M) model's
skill: steps past 2, statuses, every call recorded and rebuilt byte for byte, token ids from the server."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from mimo_core.config import read_config
from mimo_core.datasets.loader import load_tasks
from mimo_core.exports.write import run_export
from mimo_core.records.model_calls import iter_steps
from mimo_core.records.results import ResultRecord
from mimo_core.records.trajectory import Trajectory, read_trajectory
from mimo_core.run.batch import run_jobs
from mimo_core.run.plan import RunRequest, plan_run
from mimo_core.status import ExitStatus
from testkit.llama_server import MAX_TOKENS, LlamaServer, llama_config
from testkit.tasks import write_tasks


@dataclass
class Rollout:
    record: ResultRecord
    folder: Path
    out: Path

    @property
    def traj(self) -> Trajectory:
        return read_trajectory(self.folder / "traj.json")


def run_rollout(
    folder: Path, config: Path, cancel: threading.Event | None = None, problem: str | None = None
) -> Rollout:
    data = write_tasks(folder)
    if problem is not None:
        row = json.loads(data.read_text())
        data.write_text(json.dumps({**row, "problem_statement": problem}) + "\n")
    out = folder / "out"
    request = RunRequest(dataset=str(data), configs=[str(config)], output_dir=out, run_id=folder.name)
    [record] = run_jobs(plan_run(request, load_tasks(str(data)), [read_config(config)]).jobs, cancel=cancel)
    return Rollout(record, out / record.output_dir, out)


@pytest.fixture(scope="module")
def chat_rollout(llama: LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> Rollout:
    folder = tmp_path_factory.mktemp("llama-chat")
    return run_rollout(folder, llama_config(folder, "chat", llama))


def test_a_multi_step_tool_calling_rollout_runs_on_chat(chat_rollout: Rollout) -> None:
    """Every request after the first carries assistant tool calls and tool results (the path strict
    servers refused): three steps, then the step limit; no call failed."""
    rec, traj = chat_rollout.record, chat_rollout.traj
    assert (rec.exit_status, rec.steps) == (ExitStatus.STEP_LIMIT, 3), rec.error
    assert rec.reward is not None and rec.prompt_tokens > 0 and rec.completion_tokens > 0
    calls = list(iter_steps(chat_rollout.folder / "agent_msgs"))  # each rebuilt request checked by its hash
    assert [c.step for c in calls] == [1, 2, 3]
    assert all(c.response["choices"][0]["message"].get("tool_calls") for c in calls)
    later = calls[-1].request["messages"]
    assert any(m["role"] == "assistant" and m.get("tool_calls") for m in later)
    assert any(m["role"] == "tool" for m in later)
    for m in later:  # what went back is JSON every strict server parses, even a call cut at the token cap
        for c in m.get("tool_calls") or ():
            assert isinstance(json.loads(c["function"]["arguments"]), dict)
    assert all(c.finish_reason in ("tool_calls", "length", "stop") for c in traj.calls)


def test_a_rollout_against_llama_cpp_records_its_token_ids(chat_rollout: Rollout) -> None:
    traj = chat_rollout.traj
    for call in traj.calls:
        assert call.token_ids, "completion token ids (llama.cpp: logprobs.content[].id)"
        assert 0 < len(call.token_ids) <= MAX_TOKENS and len(call.token_ids) == call.usage.completion_tokens
        assert call.prompt_token_ids and len(call.prompt_token_ids) == call.usage.prompt_tokens  # via /tokenize
        assert call.logprobs and len(call.logprobs) == len(call.token_ids)
    # each call's prompt is the previous one's prompt + completion + the new turns: ids are one sequence
    first, second = traj.calls[0], traj.calls[1]
    assert second.prompt_token_ids[: len(first.prompt_token_ids)] == first.prompt_token_ids


def test_the_rl_and_sft_exports_of_a_llama_cpp_run_load_with_datasets(
    chat_rollout: Rollout,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import datasets

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    rl = run_export("rl", [chat_rollout.out], tmp_path / "rl")
    assert (rl.rollouts, rl.rows, rl.skipped) == (1, 3, [])
    ds = datasets.load_dataset(
        "parquet", data_files=str(tmp_path / "rl" / "rl.parquet"), split="train", cache_dir=str(tmp_path / "hf")
    )
    assert len(ds) == 3
    for row, call in zip(ds, chat_rollout.traj.calls, strict=True):
        assert row["completion_token_ids"] == call.token_ids and row["prompt_token_ids"] == call.prompt_token_ids
        assert row["loss_mask"] == [0] * len(call.prompt_token_ids) + [1] * len(call.token_ids)
    sft = run_export("sft", [chat_rollout.out], tmp_path / "sft")
    assert (sft.rollouts, sft.skipped) == (1, [])
    [row] = datasets.load_dataset(
        "parquet", data_files=str(tmp_path / "sft" / "sft.parquet"), split="train", cache_dir=str(tmp_path / "hf2")
    )
    assert [m["role"] for m in row["messages"]][:3] == ["system", "user", "assistant"]


def test_a_multi_step_tool_calling_rollout_runs_on_responses(llama: LlamaServer, tmp_path: Path) -> None:
    rollout = run_rollout(tmp_path, llama_config(tmp_path, "resp", llama, protocol="responses"))
    assert (rollout.record.exit_status, rollout.record.steps) == (ExitStatus.STEP_LIMIT, 3), rollout.record.error
    calls = list(iter_steps(rollout.folder / "agent_msgs"))
    assert len(calls) == 3 and all(c.response["object"] == "response" for c in calls)
    later = calls[-1].request["input"]
    assert any(i.get("type") == "function_call" for i in later)
    assert any(i.get("type") == "function_call_output" for i in later)


def _busy(llama: LlamaServer) -> bool:
    with urllib.request.urlopen(f"{llama.root}/slots", timeout=10) as resp:
        return any(slot.get("is_processing") for slot in json.load(resp))


def test_an_interrupted_call_ends_the_rollout_at_once(llama: LlamaServer, tmp_path: Path) -> None:
    """Long replies (400 tokens, ~15 s here): the stop lands mid-call and the rollout ends `interrupted`
    within seconds, not when the reply is done; the failing call is recorded. (llama.cpp cancels a request
    whose client hung up only when it streams: a non-streamed one runs on to its end, so this waits for the
    server to be idle before the next test; docs/models.md.)"""
    cfg = llama_config(tmp_path, "stop", llama, model_kwargs={"max_output_tokens": 400, "tool_choice": "auto"})
    cancel = threading.Event()
    box: list[Rollout] = []
    runner = threading.Thread(target=lambda: box.append(run_rollout(tmp_path, cfg, cancel=cancel)))
    runner.start()
    deadline = time.monotonic() + 120
    while not _busy(llama):
        assert runner.is_alive() and time.monotonic() < deadline, "the call never started"
        time.sleep(0.1)
    cancel.set()
    stopped = time.monotonic()
    runner.join(timeout=60)
    assert not runner.is_alive()
    agent_done = time.monotonic() - stopped
    [rollout] = box
    assert rollout.record.exit_status is ExitStatus.INTERRUPTED and rollout.record.reward is None
    assert rollout.traj.timings.agent_s < 30 and agent_done < 30
    still_busy = _busy(llama)  # the reply would take ~15 s; our side gave up long before
    deadline = time.monotonic() + 120
    while _busy(llama):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert still_busy or agent_done < 5


def test_a_context_overflow_is_named_with_the_servers_message(llama: LlamaServer, tmp_path: Path) -> None:
    """HTTP 400 exceed_context_size_error on the first request: `request_refused` (the agent never acted,
    so no 0 is scored), the server's words kept in results.jsonl's error."""
    long_task = "Make greeting.txt say goodbye. " + "Read every line twice. " * 1500  # > 4096 tokens
    rollout = run_rollout(tmp_path, llama_config(tmp_path, "big", llama), problem=long_task)
    rec = rollout.record
    assert (rec.exit_status, rec.reward) == (ExitStatus.REQUEST_REFUSED, None)
    assert "context_window" in (rec.error or "") and "exceeds the available context size" in (rec.error or "")
    [line] = [json.loads(t) for t in (rollout.out / "results.jsonl").read_text().splitlines()]
    assert "exceeds the available context size" in line["error"]
