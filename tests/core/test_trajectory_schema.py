"""traj.json: typed in memory, OpenAI chat format on disk, every version ever written still readable, and
its status always the one results.jsonl holds for the same rollout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mimo_core.config import read_config
from mimo_core.datasets.loader import load_tasks
from mimo_core.records.results import ResultsStore
from mimo_core.records.trajectory import SCHEMA_VERSION, read_trajectory
from mimo_core.run.batch import run_jobs
from mimo_core.run.plan import RunRequest, plan_run
from mimo_core.status import ExitStatus
from testkit.scripted_llm import call, turns
from testkit.tasks import write_config
from tests.core.conftest import SECRET, base_url

FIXTURES = Path(__file__).parent / "fixtures"


def test_reads_a_schema_1_0_file_with_typed_messages_and_tools() -> None:
    traj = read_trajectory(FIXTURES / "traj_v1_0.json")
    assert traj.schema_version == SCHEMA_VERSION
    assert (traj.exit_status, traj.agent_exit_status) == (ExitStatus.SUBMITTED, ExitStatus.SUBMITTED)
    assistant = traj.messages[2]
    assert assistant.reasoning == "I should edit the file." and assistant.provider_items == [
        {"type": "reasoning", "id": "rs_1", "summary": []}
    ]
    assert [(c.id, c.name) for c in assistant.tool_calls or []] == [("call_1", "bash")]
    assert traj.messages[3].tool_call_id == "call_1" and traj.messages[3].name == "bash"
    assert [t.name for t in traj.tools] == ["bash", "submit"]
    assert traj.tools[0].parameters["required"] == ["command"]


def test_messages_and_tools_of_a_1_0_file_are_written_back_unchanged() -> None:
    """Only the version fields differ: a trainer reading the new files sees the same transcript."""
    old = json.loads((FIXTURES / "traj_v1_0.json").read_text())
    new = read_trajectory(FIXTURES / "traj_v1_0.json").model_dump(mode="json")
    assert new["messages"] == old["messages"] and new["tools"] == old["tools"]
    # fields added later read as 0 (1.3: budget waits, cache writes)
    assert new["timings"].pop("budget_wait_s") == 0 and new["usage"].pop("cache_write_tokens") == 0
    for c in new["calls"]:
        assert c.pop("wait_s") == 0 and c["usage"].pop("cache_write_tokens") == 0
    assert {k for k in new if new[k] != old.get(k)} == {"schema_version", "agent_exit_status", "containment_events"}
    assert new["containment_events"] == []


def test_reads_a_judge_trajectory_written_before_the_judge_shared_the_schema() -> None:
    traj = read_trajectory(FIXTURES / "unversioned_judge" / "greet-0" / "cfg" / "0" / "judge" / "traj.json")
    assert (traj.agent_type, traj.instance_id, traj.config_name, traj.rollout_index) == ("judge", "greet-0", "cfg", 0)
    assert traj.model is not None and traj.model.name == "judge-model"
    assert traj.messages[-1].tool_calls and traj.messages[-1].tool_calls[0].name == "submit"


def test_an_unknown_schema_version_is_refused_naming_the_file(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "traj_v1_0.json").read_text())
    path = tmp_path / "traj.json"
    path.write_text(json.dumps({**data, "schema_version": "9.0"}))
    with pytest.raises(ValueError, match=r"traj\.json: unknown trajectory schema_version '9\.0'"):
        read_trajectory(path)


CRASHING_VERIFIER = "mkdir -p /logs/verifier; echo -1 > /logs/verifier/reward.txt"


def test_a_crashing_verifier_gives_traj_and_results_the_same_status(tmp_path: Path, scripted_llm, monkeypatch) -> None:
    monkeypatch.setenv("MIMO_TEST_BASE_URL", base_url(scripted_llm, "chat"))
    monkeypatch.setenv("MIMO_TEST_API_KEY", SECRET)
    scripted_llm.set_responder(turns(call("submit")))
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "greeting.txt").write_text("hello\n")
    data = tmp_path / "tasks.jsonl"
    data.write_text(
        json.dumps(
            {
                "instance_id": "crash",
                "dataset_type": "generic",
                "repo_dir": "repo",
                "eval_script": CRASHING_VERIFIER,
                "problem_statement": "Say goodbye.",
            }
        )
        + "\n"
    )
    out = tmp_path / "out"
    config = read_config(write_config(tmp_path, "cfg"))
    request = RunRequest(dataset=str(data), configs=[config.path], output_dir=out, run_id="run-crash")
    [record] = run_jobs(plan_run(request, load_tasks(str(data)), [config]).jobs)
    traj = read_trajectory(out / record.output_dir / "traj.json")
    assert record.exit_status == traj.exit_status == ExitStatus.GRADING_ERROR
    assert record.error == traj.error and "verifier crashed" in (record.error or "")
    assert traj.agent_exit_status == ExitStatus.SUBMITTED  # the agent's own ending is kept beside it
    assert (record.infra_error, record.reward) == (True, None)  # never recorded as the model's 0 score
    line = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    on_disk = json.loads((out / record.output_dir / "traj.json").read_text())
    assert line["exit_status"] == on_disk["exit_status"] == "grading_error"
    assert line["infra_error"] is True and line["error_class"] == "grading_error"


def test_results_lines_written_before_derived_fields_load_with_the_new_meaning(tmp_path: Path) -> None:
    """A config_error line from before 1.1 said infra_error: true; the flag now follows the status."""
    shutil.copy(FIXTURES / "traj_v1_0.json", tmp_path / "traj.json")
    line = {
        "run_id": "r",
        "instance_id": "i",
        "config_name": "c",
        "exit_status": "config_error",
        "infra_error": True,
        "error_class": "config_error",
        "error": "x",
        "output_dir": ".",
    }
    (tmp_path / "results.jsonl").write_text(json.dumps(line) + "\n")
    [record] = ResultsStore(tmp_path).load().values()
    assert (record.exit_status, record.infra_error, record.error_class) == (
        ExitStatus.CONFIG_ERROR,
        False,
        ExitStatus.CONFIG_ERROR,
    )
    assert ResultsStore(tmp_path).finished() == {}  # no fingerprint from before: done again
