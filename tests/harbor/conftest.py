"""A Harbor-layout task of our own, written like DeepSWE's: a separate verifier that applies the patch the
collect hook (`git diff --binary <base> HEAD`) wrote, reward.json + a CTRF report; and helpers to run
rollouts on it in-process against the scripted LLM server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from mimo_core.datasets.harbor import convert_task
from mimo_core.records.results import ResultRecord
from mimo_core.run.batch import run_jobs
from mimo_core.run.plan import RunRequest, plan_run
from tests.core.conftest import SECRET, base_url

HOOK = (
    "cd /app && mkdir -p /logs/artifacts && "
    "git diff --binary $(git rev-list --max-parents=0 HEAD | tail -n 1) HEAD > /logs/artifacts/model.patch"
)

TEST_SH = r"""#!/bin/bash
# DeepSWE style: apply the collected patch, run the checks, write reward.json and a CTRF report.
mkdir -p /logs/verifier
cd /app
if [ -s /logs/artifacts/model.patch ] && ! git apply /logs/artifacts/model.patch; then
    echo '{"reward": 0, "apply_failed": true}' > /logs/verifier/reward.json; exit 0
fi
python3 - <<'PY'
import json
config = json.load(open("/tests/config.json"))
text = open("/app/greeting.txt").read()
results = {"test_greeting.py::test_says_goodbye": "goodbye" in text,
           "test_greeting.py::test_file_exists": True}
tests = [{"name": n, "status": "passed" if ok else "failed", "duration": 1} for n, ok in results.items()]
json.dump({"results": {"tool": {"name": "demo-checks"}, "tests": tests}}, open("/logs/verifier/ctrf.json", "w"))
ok = all(results[t] for t in config["f2p_node_ids"] + config["p2p_node_ids"])
json.dump({"reward": 1 if ok else 0}, open("/logs/verifier/reward.json", "w"))
print("checked", len(results), "tests")
PY
"""


def write_harbor_task(
    root: Path, name: str = "greet-harbor", agent_timeout: float = 600.0, mode: str = "separate", image: bool = False
) -> Path:
    """A task folder. Its starting files ship in environment/repo/, so it also runs on the host, unless
    `image`: then it names an image and a Dockerfile only, like a real DeepSWE task."""
    task = root / name
    (task / "tests").mkdir(parents=True)
    (task / "environment").mkdir()
    toml = f"""schema_version = "1.3"
artifacts = ["/logs/artifacts/model.patch"]
[task]
name = "mimo-tests/{name}"
[metadata]
task_id = "{name}"
[verifier]
network_mode = "no-network"
environment_mode = "{mode}"
timeout_sec = 60.0
[[verifier.collect]]
command = "{HOOK}"
timeout_sec = 30.0
[agent]
timeout_sec = {agent_timeout}
[environment]
docker_image = "mimo-tests/{name}:latest"
build_timeout_sec = 300.0
[solution.env]
GREETING = "goodbye"
"""
    (task / "task.toml").write_text(toml)
    (task / "instruction.md").write_text("Make /app/greeting.txt say goodbye, then commit your work.\n")
    if image:  # like DeepSWE's images: the repository at its base commit, made by the Dockerfile
        (task / "environment" / "Dockerfile").write_text(
            "FROM mimo-base:bookworm\nRUN mkdir -p /app && cd /app && echo hello > greeting.txt && git init -q && "
            "git add -A && git -c user.name=t -c user.email=t@t commit -qm base\nWORKDIR /app\n"
        )
    else:
        (task / "environment" / "Dockerfile").write_text("FROM mimo-base:bookworm\nCOPY repo /app\nWORKDIR /app\n")
        (task / "environment" / "repo").mkdir()
        (task / "environment" / "repo" / "greeting.txt").write_text("hello\n")
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text('#!/bin/bash\ncd /app && echo "$GREETING" > greeting.txt\n')
    (task / "tests" / "test.sh").write_text(TEST_SH)
    (task / "tests" / "config.json").write_text(
        json.dumps(
            {
                "f2p_node_ids": ["test_greeting.py::test_says_goodbye"],
                "p2p_node_ids": ["test_greeting.py::test_file_exists"],
            }
        )
    )
    return task


def write_rows(folder: Path, *tasks: Path) -> Path:
    path = folder / "rows.jsonl"
    path.write_text("".join(json.dumps(convert_task(t, relative_to=folder)) + "\n" for t in tasks))
    return path


def write_harbor_config(folder: Path, name: str = "cfg", **blocks: dict[str, Any]) -> Path:
    cfg: dict[str, Any] = {
        "agent": {"type": "default", "step_limit": 20},
        "environment": {"environment_class": "local", "timeout": 30},
        "model": {
            "model_name": "scripted-model",
            "protocol": "chat",
            "model_kwargs": {"base_url": "${MIMO_TEST_BASE_URL}", "api_key": "${MIMO_TEST_API_KEY}"},
            "retry": {"max_attempts": 2, "initial_delay": 0.01, "max_delay": 0.05, "timeout": 5},
        },
    }
    for key, value in blocks.items():
        cfg[key] = {**cfg.get(key, {}), **value}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture
def run_rollout(tmp_path: Path, scripted_llm, monkeypatch):
    """`run_rollout(rows, config, recalc=None) -> (record, rollout folder)`, in-process, under tmp_path/out-N."""
    monkeypatch.setenv("MIMO_TEST_BASE_URL", base_url(scripted_llm, "chat"))
    monkeypatch.setenv("MIMO_TEST_API_KEY", SECRET)
    counter = iter(range(100))

    def run(rows: Path, config: Path, recalc: str | None = None) -> tuple[ResultRecord, Path]:
        out = tmp_path / f"out-{next(counter)}"
        request = RunRequest(dataset=str(rows), configs=[str(config)], recalc=recalc, output_dir=out, run_id="run-test")
        jobs = plan_run(request).jobs
        [record] = run_jobs(jobs)
        return record, out / record.output_dir

    return run
