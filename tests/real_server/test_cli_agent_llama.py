"""A CLI agent that speaks chat (mini-swe-agent, pinned from PyPI as in tests/cli_agents) against the real
llama.cpp server, through the recording proxy: every call it made is recorded and rebuilt, the rollout
ends on its step limit, and a stopped run is `interrupted` with its call in flight recorded."""

from __future__ import annotations

from mimo_core.records.model_calls import iter_steps
from mimo_core.status import ExitStatus
from testkit.llama_server import LlamaServer
from tests.cli_agents.conftest import CACHE, run_cli_rollout

# mini-swe-agent's own model settings (litellm's completion kwargs): the form of tool_choice llama.cpp
# honours, greedy sampling, short replies.
MINI_ARGS = [
    "-c",
    "model.model_kwargs.tool_choice=required",
    "-c",
    "model.model_kwargs.temperature=0",
    "-c",
    "model.model_kwargs.max_tokens=48",
]


def test_mini_swe_agent_runs_steps_against_llama_cpp(llama: LlamaServer, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MIMOAGENT_CACHE_DIR", str(CACHE))
    record, rollout, traj = run_cli_rollout(
        tmp_path, llama, "mini-swe-agent", "chat", exit_code=None, step_limit=3, cli_args=MINI_ARGS
    )
    log = (rollout / "instance.log").read_text()
    assert record.exit_status in (ExitStatus.STEP_LIMIT, ExitStatus.SUBMITTED), log[-3000:]
    calls = list(iter_steps(rollout / "agent_msgs"))
    assert len(calls) >= 2 and record.steps == len(calls), log[-3000:]
    assert all(c.response.get("_http_status", 200) == 200 for c in calls)
    assert all(c.response["choices"][0]["message"].get("tool_calls") for c in calls)
    assert traj.usage.prompt_tokens > 0 and traj.usage.completion_tokens > 0


def test_a_stopped_cli_rollout_is_interrupted_and_its_call_in_flight_recorded(
    llama: LlamaServer,
    tmp_path,
    monkeypatch,
) -> None:
    """SIGTERM while mini-swe-agent waits on a long reply: `interrupted` (never scored), the call in flight
    in agent_msgs with what had arrived, and a resume plans the rollout again."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    from mimo_core.records.results import ResultsStore
    from mimo_core.run.plan import RunRequest, plan_run
    from testkit.tasks import write_tasks
    from tests.cli_agents.conftest import write_cli_config
    from tests.core.conftest import REPO

    def busy() -> bool:
        with urllib.request.urlopen(f"{llama.root}/slots", timeout=10) as resp:
            return any(s.get("is_processing") for s in json.load(resp))

    data = write_tasks(tmp_path)
    args = [a.replace("max_tokens=48", "max_tokens=600") for a in MINI_ARGS]
    cfg = write_cli_config(tmp_path, "mini", "mini-swe-agent", "chat", step_limit=3, cli_args=args)
    out = tmp_path / "out"
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": llama.openai_base_url,
        "MIMO_TEST_API_KEY": "sk-llama-test-key-0042",
        "MIMOAGENT_OBSERVERS": "0",
        "MIMOAGENT_CACHE_DIR": str(CACHE),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "mimo_core.cli", "-c", str(cfg), "--dataset", str(data), "-o", str(out)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not busy():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-3000:]
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    [record] = ResultsStore(out).load().values()
    assert (record.exit_status, record.reward, record.passed) == (ExitStatus.INTERRUPTED, None, None), stderr[-2000:]
    calls = list(iter_steps(out / record.output_dir / "agent_msgs"))
    assert calls and calls[-1].response.get("_incomplete") == "stopped"
    monkeypatch.setenv("MIMO_TEST_BASE_URL", llama.openai_base_url)
    monkeypatch.setenv("MIMO_TEST_API_KEY", "sk-llama-test-key-0042")
    request = RunRequest(dataset=str(data), configs=[str(cfg)], output_dir=out, run_id="resume")
    assert [j.key for j in plan_run(request).jobs] == [record.key]  # a resume runs it again
