"""Each limit and each model failure ends a rollout with its own exit status (in-process, real server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mimo_core.records.results import ResultRecord
from mimo_core.run.batch import run_jobs
from mimo_core.run.plan import RunRequest, plan_run
from mimo_core.status import ExitStatus
from testkit.scripted_llm import Reply, call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import SECRET, base_url

BUSY = turns(call("bash", command="echo working"))  # never submits


def run_inprocess(workdir: Path, server, monkeypatch, protocol: str = "chat", **agent: object) -> ResultRecord:
    monkeypatch.setenv("MIMO_TEST_BASE_URL", base_url(server, protocol))
    monkeypatch.setenv("MIMO_TEST_API_KEY", SECRET)
    data = write_tasks(workdir)
    cfg = write_config(workdir, "cfg", protocol=protocol, **agent)
    request = RunRequest(dataset=str(data), configs=[str(cfg)], output_dir=workdir / "out", run_id="run-test")
    jobs = plan_run(request).jobs
    [record] = run_jobs(jobs)
    return record


def test_step_limit(workdir: Path, scripted_llm, monkeypatch) -> None:
    scripted_llm.set_responder(BUSY)
    rec = run_inprocess(workdir, scripted_llm, monkeypatch, step_limit=4)
    assert (rec.exit_status, rec.steps, rec.infra_error) == (ExitStatus.STEP_LIMIT, 4, False)
    assert rec.reward == 0.0  # still graded: the final state is what it is


def test_cost_limit(workdir: Path, scripted_llm, monkeypatch) -> None:
    scripted_llm.set_responder(turns(Reply(tool_calls=[("bash", {"command": "true"})], prompt_tokens=400_000)))
    rec = run_inprocess(workdir, scripted_llm, monkeypatch, cost_limit=1.0)  # $1/Mtok input: $0.40 a call
    assert (rec.exit_status, rec.steps) == (ExitStatus.COST_LIMIT, 3)
    assert rec.cost == pytest.approx(3 * (0.4 + 5 * 2e-6))


def test_time_limit(workdir: Path, scripted_llm, monkeypatch) -> None:
    scripted_llm.set_responder(BUSY)
    scripted_llm.latency = 0.2
    rec = run_inprocess(workdir, scripted_llm, monkeypatch, time_limit=0.5, step_limit=50)
    assert rec.exit_status == ExitStatus.TIME_LIMIT
    assert 1 <= rec.steps <= 4  # the call in flight at the limit is cut, not waited for


def test_malformed_tool_calls_are_answered_then_end_the_rollout(workdir: Path, scripted_llm, monkeypatch) -> None:
    scripted_llm.set_responder(turns(Reply(tool_calls=[("bash", {})], raw_arguments={0: '{"command": "ls'})))
    rec = run_inprocess(workdir, scripted_llm, monkeypatch, max_format_errors=2)
    assert (rec.exit_status, rec.steps) == (ExitStatus.FORMAT_ERRORS, 3)
    second = scripted_llm.requests[1].body["messages"]
    assert second[-1]["role"] == "tool" and "not valid JSON" in second[-1]["content"]


def test_a_good_call_resets_the_malformed_count(workdir: Path, scripted_llm, monkeypatch) -> None:
    bad = Reply(tool_calls=[("bash", {})], raw_arguments={0: "{oops"})
    scripted_llm.set_responder(turns(bad, bad, call("bash", command="true"), bad, bad, call("submit")))
    rec = run_inprocess(workdir, scripted_llm, monkeypatch, max_format_errors=2)
    assert (rec.exit_status, rec.steps) == (ExitStatus.SUBMITTED, 6)


def test_text_only_reply_counts_as_malformed(workdir: Path, scripted_llm, monkeypatch) -> None:
    scripted_llm.set_responder(turns(Reply(content="I think I am done."), call("submit")))
    rec = run_inprocess(workdir, scripted_llm, monkeypatch)
    assert (rec.exit_status, rec.steps) == (ExitStatus.SUBMITTED, 2)
    assert "no tool call" in scripted_llm.requests[1].body["messages"][-1]["content"]


OVERFLOW = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}


def test_context_window_overflow_ends_without_retry(workdir: Path, scripted_llm, monkeypatch) -> None:
    def overflow_after_one_step(req):
        scripted_llm.inject(400, body=OVERFLOW)  # the next request overflows
        return call("bash", command="echo working")

    scripted_llm.set_responder(overflow_after_one_step)
    rec = run_inprocess(workdir, scripted_llm, monkeypatch)
    assert (rec.exit_status, rec.infra_error) == (ExitStatus.CONTEXT_WINDOW, False)
    assert len(scripted_llm.requests) == 2
    assert "maximum context length is 8192 tokens" in (rec.error or "")  # the provider's own words


def test_a_first_request_the_endpoint_refuses_is_not_scored(workdir: Path, scripted_llm, monkeypatch) -> None:
    """The agent never acted: `request_refused`, ungraded (no 0 in the pass rate), the provider's message kept."""
    scripted_llm.set_responder(BUSY)
    scripted_llm.inject(400, body=OVERFLOW)
    rec = run_inprocess(workdir, scripted_llm, monkeypatch)
    assert (rec.exit_status, rec.reward, rec.passed) == (ExitStatus.REQUEST_REFUSED, None, None)
    assert "context_window" in (rec.error or "") and "maximum context length is 8192 tokens" in (rec.error or "")
    assert len(scripted_llm.requests) == 1


def test_unreachable_model_is_an_infra_error_after_retries(workdir: Path, scripted_llm, monkeypatch) -> None:
    scripted_llm.inject(503, times=10)
    rec = run_inprocess(workdir, scripted_llm, monkeypatch)
    assert (rec.exit_status, rec.infra_error, rec.reward) == (ExitStatus.MODEL_ERROR, True, None)
    assert len(scripted_llm.requests) == 3  # retry.max_attempts in the test config


def test_auth_error_is_not_retried(workdir: Path, scripted_llm, monkeypatch) -> None:
    scripted_llm.inject(401, body={"error": {"message": "bad key", "type": "invalid_api_key"}})
    rec = run_inprocess(workdir, scripted_llm, monkeypatch)
    assert (rec.exit_status, rec.infra_error) == (ExitStatus.MODEL_AUTH_ERROR, True)
    assert len(scripted_llm.requests) == 1
