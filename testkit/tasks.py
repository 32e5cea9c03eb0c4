"""A tiny generic task (make greeting.txt say goodbye, graded by a real shell verifier) and configs whose
model is the scripted LLM endpoint, named by `${MIMO_TEST_BASE_URL}` and `${MIMO_TEST_API_KEY}`."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

EVAL = (
    "mkdir -p /logs/verifier; "
    "if grep -q goodbye greeting.txt; then echo 1 > /logs/verifier/reward.txt; "
    "else echo 0 > /logs/verifier/reward.txt; fi"
)


def write_tasks(folder: Path, n: int = 1) -> Path:
    """`folder/tasks.jsonl` with n rows `greet-0..n-1` sharing the repo `folder/repo`."""
    (folder / "repo").mkdir(parents=True, exist_ok=True)
    (folder / "repo" / "greeting.txt").write_text("hello\n")
    rows = [
        {
            "instance_id": f"greet-{i}",
            "dataset_type": "generic",
            "repo_dir": "repo",
            "eval_script": EVAL,
            "problem_statement": f"Make greeting.txt say goodbye (task {i}).",
        }
        for i in range(n)
    ]
    path = folder / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_config(folder: Path, name: str, protocol: str = "chat", **agent: object) -> Path:
    """`folder/<name>.yaml`: the default agent on the local backend, model `scripted-model`."""
    cfg = {
        "agent": {"type": "default", "step_limit": 10, **agent},
        "environment": {"environment_class": "local", "timeout": 30},
        "model": {
            "model_name": "scripted-model",
            "protocol": protocol,
            "model_kwargs": {"base_url": "${MIMO_TEST_BASE_URL}", "api_key": "${MIMO_TEST_API_KEY}"},
            "retry": {"max_attempts": 3, "initial_delay": 0.01, "max_delay": 0.05, "timeout": 5},
            "pricing": {"input": 1.0, "output": 2.0},
        },
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def write_named_config(folder: Path, name: str) -> Path:
    """A config whose model name is its own name, so the scripted model can tell A from B."""
    path = write_config(folder, name)
    path.write_text(path.read_text().replace("scripted-model", name))
    return path
