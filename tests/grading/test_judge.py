"""The rubric judge: a real agent loop against the scripted endpoint, in a real local sandbox."""

from __future__ import annotations

import json
from pathlib import Path

from mimo_core.config import JudgeAgentConfig, ModelConfig, RetryConfig
from mimo_core.datasets.base import Rubric
from mimo_core.datasets.generic import GenericTask
from mimo_core.grading.rubric import parse_verdict, rubric_items
from mimo_core.records.model_calls import steps
from mimo_core.status import ExitStatus
from testkit.scripted_llm import ScriptedLLM, call, turns

ITEMS = rubric_items(["Adds a test", {"criterion": "Keeps the API", "weight": 3}])


def test_verdict_parser_accepts_fences_prose_and_loose_values() -> None:
    text = (
        'Here you go:\n```json\n{"scores": [{"index": 1, "score": "pass", "reason": "ok"}, '
        '{"index": 2, "score": "3/4"}]}\n```'
    )
    scores, error = parse_verdict(text, ITEMS)
    assert error is None and [s.score for s in scores] == [1.0, 0.75] and scores[0].reason == "ok"
    scores, error = parse_verdict('{"Adds a test": 0, "2": {"score": 1.7}}', ITEMS)
    assert error is None and [s.score for s in scores] == [0.0, 1.0]


def test_verdict_parser_reports_missing_and_unreadable_scores() -> None:
    scores, error = parse_verdict('[{"score": 1}]', ITEMS)
    assert scores[1].score is None and error == "the judge gave no score for rubric(s) [2]"
    assert parse_verdict("looks good to me", ITEMS)[1] == "could not read any rubric score from the judge's verdict"


def test_judge_inspects_environment_and_scores_each_rubric(tmp_path: Path, new_env) -> None:
    from mimo_core.agents.judge import run_judge

    verdict = json.dumps(
        {"scores": [{"index": 1, "score": 0, "reason": "no test"}, {"index": 2, "score": 1, "reason": "API unchanged"}]}
    )
    with ScriptedLLM(turns(call("bash", command="cat answer.txt"), call("submit", message=verdict))) as llm:
        cfg = JudgeAgentConfig(
            model=ModelConfig(
                model_name="judge-model",
                model_kwargs={"base_url": llm.openai_base_url, "api_key": "k"},
                retry=RetryConfig(max_attempts=1),
            )
        )
        task = GenericTask(
            instance_id="j1",
            problem_statement="Write 42 to answer.txt",
            rubric=Rubric(rubrics=[it.text for it in ITEMS[:1]] + [{"criterion": "Keeps the API", "weight": 3}]),
        )
        from mimo_core.datasets.registry import get_dataset_type

        dtype = get_dataset_type("generic")
        env = new_env(dtype.sandbox_spec(task, None, 30, True))
        dtype.setup(env, task)
        env.write_file(f"{env.spec.cwd}/answer.txt", b"42\n")
        result = run_judge(cfg, task, env, tmp_path / "judge", shell=True, submission="diff --git a/x b/x")
        first_request = llm.requests[0].body["messages"]
        second_request = llm.requests[1].body["messages"]
    assert result.error is None and result.exit_status == ExitStatus.SUBMITTED
    assert [s.score for s in result.scores] == [0.0, 1.0] and result.scores[1].reason == "API unchanged"
    assert result.score == 0.75  # weighted: (0*1 + 1*3) / 4
    assert "1. Adds a test\n2. Keeps the API" in first_request[1]["content"]
    assert "read-only" in first_request[0]["content"] and "diff --git a/x b/x" in first_request[1]["content"]
    assert any("42" in str(m.get("content")) for m in second_request if m["role"] == "tool")
    traj = json.loads((tmp_path / "judge" / "traj.json").read_text())
    assert traj["agent_type"] == "judge" and traj["steps"] == 2 and result.trajectory == "judge/traj.json"
    assert steps(tmp_path / "judge" / "agent_msgs") == [1, 2]
