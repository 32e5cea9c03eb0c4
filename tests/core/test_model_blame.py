"""Endpoint and setup failures are never the model's 0, and what the model sees holds no host detail."""

from __future__ import annotations

import json
from pathlib import Path

from mimo_core.records.results import ResultsStore
from mimo_core.run.plan import RunRequest, plan_run
from mimo_core.status import ExitStatus
from testkit.scripted_llm import Reply, call, turns
from tests.core.conftest import SECRET
from tests.core.test_limits import run_inprocess


def test_a_404_is_not_a_graded_zero_and_the_failing_request_is_saved(workdir: Path, scripted_llm, monkeypatch):
    scripted_llm.inject(404, times=5, body={"error": {"message": "model 'scripted-model' not found"}})
    rec = run_inprocess(workdir, scripted_llm, monkeypatch)
    assert (rec.exit_status, rec.infra_error, rec.reward, rec.passed) == (ExitStatus.MODEL_ERROR, True, None, None)
    assert "not found" in (rec.error or "") and len(scripted_llm.requests) == 1
    [line] = (workdir / "out" / rec.output_dir / "agent_msgs" / "steps.jsonl").read_text().splitlines()
    saved = json.loads(line)
    assert saved["request"]["messages"][0]["role"] == "system"
    assert saved["response"]["error"]["status"] == 404
    # a rerun does it again: it is not finished
    assert ResultsStore(workdir / "out").finished() == {}


def test_a_key_echoed_by_the_endpoint_lands_in_no_output_file(workdir: Path, scripted_llm, monkeypatch):
    scripted_llm.inject(401, body={"error": {"message": f"Incorrect API key provided: {SECRET}"}})
    rec = run_inprocess(workdir, scripted_llm, monkeypatch)
    assert rec.exit_status == ExitStatus.MODEL_AUTH_ERROR and "***" in (rec.error or "")
    files = [p for p in (workdir / "out").rglob("*") if p.is_file()]
    assert any(p.name == "traj.json" for p in files) and any(p.name == "instance.log" for p in files)
    for p in files:
        assert SECRET not in p.read_text(errors="replace"), p


def test_an_html_page_with_status_200_is_a_model_error_not_a_format_error(workdir: Path, scripted_llm, monkeypatch):
    scripted_llm.inject(200, times=10, raw=b"<html><body>502 Bad Gateway</body></html>", content_type="text/html")
    rec = run_inprocess(workdir, scripted_llm, monkeypatch)
    assert (rec.exit_status, rec.infra_error, rec.reward) == (ExitStatus.MODEL_ERROR, True, None)
    assert "not JSON" in (rec.error or "") and len(scripted_llm.requests) == 3


def test_json_without_choices_is_retried_then_the_rollout_goes_on(workdir: Path, scripted_llm, monkeypatch):
    scripted_llm.set_responder(turns(call("submit")))
    scripted_llm.inject(200, body={"object": "chat.completion", "choices": []})
    rec = run_inprocess(workdir, scripted_llm, monkeypatch)
    assert (rec.exit_status, rec.steps) == (ExitStatus.SUBMITTED, 1)
    assert len(scripted_llm.requests) == 2


def test_raw_newlines_inside_argument_strings_are_accepted(workdir: Path, scripted_llm, monkeypatch):
    raw = '{"path": "greeting.txt", "content": "good\nbye\n"}'  # a real newline, as grammar-bound servers emit
    scripted_llm.set_responder(turns(Reply(tool_calls=[("write", {})], raw_arguments={0: raw}), call("submit")))
    rec = run_inprocess(workdir, scripted_llm, monkeypatch)
    assert (rec.exit_status, rec.steps) == (ExitStatus.SUBMITTED, 2)
    observation = scripted_llm.requests[1].body["messages"][-1]["content"]
    assert "not valid JSON" not in observation


def test_a_real_parse_error_says_where_it_is(workdir: Path, scripted_llm, monkeypatch):
    scripted_llm.set_responder(
        turns(Reply(tool_calls=[("bash", {})], raw_arguments={0: '{"command": "ls",, }'}), call("submit"))
    )
    run_inprocess(workdir, scripted_llm, monkeypatch)
    observation = scripted_llm.requests[1].body["messages"][-1]["content"]
    assert "not valid JSON" in observation and "line 1 column 18" in observation


def test_the_system_prompt_names_the_tasks_cwd_not_the_host_folder(workdir: Path, scripted_llm, monkeypatch):
    run_inprocess(workdir, scripted_llm, monkeypatch)
    system = scripted_llm.requests[0].body["messages"][0]["content"]
    assert "/testbed" in system and "mimo-" not in system and "/tmp" not in system


def test_planning_after_an_endpoint_error_reruns_the_rollout(workdir: Path, scripted_llm, monkeypatch):
    scripted_llm.inject(404, body={"error": {"message": "no route"}})
    run_inprocess(workdir, scripted_llm, monkeypatch)
    request = RunRequest(
        dataset=str(workdir / "tasks.jsonl"),
        configs=[str(workdir / "cfg.yaml")],
        output_dir=workdir / "out",
        run_id="run-2",
    )
    jobs = plan_run(request).jobs
    assert len(jobs) == 1
