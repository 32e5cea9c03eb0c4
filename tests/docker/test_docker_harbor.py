"""On Docker, a DeepSWE-like task (image + Dockerfile only, repository at its base commit) is graded
exactly as the official harness grades it: the collect hook runs verbatim in the container."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from mimo_core.config import read_config
from mimo_core.datasets.loader import load_tasks
from mimo_core.run.batch import run_jobs
from mimo_core.run.plan import RunRequest, plan_run
from testkit.scripted_llm import call, turns
from tests.core.conftest import SECRET, base_url
from tests.harbor.conftest import write_harbor_config, write_harbor_task, write_rows

GIT = "git -c user.name=agent -c user.email=agent@example.com"


@pytest.mark.parametrize(
    ("script", "reward"),
    [
        ("cd /app && echo goodbye > greeting.txt", 0.0),  # uncommitted: the hook's base..HEAD diff is empty
        (f"cd /app && git checkout -q -b fix && echo goodbye > greeting.txt && {GIT} commit -qam fix", 1.0),
    ],
    ids=["uncommitted-scores-0", "committed-on-a-new-branch-scores-1"],
)
def test_strict_collect_in_a_container_matches_the_official_hook(
    dockerd, docker_client, scripted_llm, tmp_path: Path, monkeypatch, script: str, reward: float
) -> None:
    monkeypatch.setenv("MIMO_TEST_BASE_URL", base_url(scripted_llm, "chat"))
    monkeypatch.setenv("MIMO_TEST_API_KEY", SECRET)
    scripted_llm.set_responder(turns(call("bash", command=script), call("submit")))
    name = f"harbor-{uuid.uuid4().hex[:6]}"
    rows = write_rows(tmp_path, write_harbor_task(tmp_path / "tasks", name, image=True))
    config = read_config(write_harbor_config(tmp_path, environment={"environment_class": "docker"}))
    request = RunRequest(dataset=str(rows), configs=[config.path], output_dir=tmp_path / "out", run_id="run-test")
    [record] = run_jobs(plan_run(request, load_tasks(str(rows)), [config]).jobs)
    assert (record.exit_status, record.reward) == ("submitted", reward), record.error
    extra = json.loads((tmp_path / "out" / record.output_dir / "reward_extra_info.json").read_text())
    assert extra["collect_mode"] == "strict" and extra["verifier_mode"] == "separate"
    assert extra["tests"]["p2p"]["passed"] == ["test_greeting.py::test_file_exists"]
    assert (tmp_path / "out" / record.output_dir / "verifier" / "ctrf.json").is_file()
    assert docker_client.containers.list(all=True, filters={"label": "mimoagent.run_id=run-test"}) == []
