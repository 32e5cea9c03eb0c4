"""The budget cases' common parts, shared by `tests/redteam/test_budgets.py` and `bench/bench_budgets.py`:
rows whose verifier rewards the answer written to solved.txt, a scripted model that plays a case's tool
calls, then solves and submits, and the local+bwrap config both run under. Each keeps its own cases
(what the test asserts was shown, what the bench measures); what a case *is* lives here once."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from testkit.scripted_llm import Reply, Request

MiB = 1 << 20
Call = tuple[str, dict[str, Any]]  # (tool, arguments); "{answer}" in a string argument is the row's answer
CASE_PREFIX = "Budget case "  # the problem statement names its case after this, for the scripted model
EVAL = (
    'mkdir -p /logs/verifier; if [ "$(cat solved.txt 2>/dev/null)" = "$(cat /tests/answer.txt)" ]; '
    "then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi"
)
SOLVE: Call = ("bash", {"command": "echo {answer} > solved.txt && echo solved"})


def junk(name: str, make: str) -> str:
    """A command making a hostile file in the sandbox's home (on disk, so its page cache is reclaimable;
    /tmp is a tmpfs charged to the sandbox's cgroup), linked from the work folder: the read tool follows
    the link inside the sandbox, the submission holds only the link (a 10 GB untracked file in the
    repository makes git's own diff fail: a separate budget, the disk's)."""
    return f'mkdir -p junk && f="$HOME/{name}" && {make} && ln -sf "$f" junk/{name} && ls -lL junk/{name}'


def bash(command: str) -> Call:
    return ("bash", {"command": command})


def read(path: str, **lines: int) -> Call:
    return ("read", {"path": path, **lines})


def budget_row(name: str, answer: str, **extra: Any) -> dict[str, Any]:
    """A generic row over the `repo` folder beside the dataset: solved once `answer` is in solved.txt."""
    return {
        "instance_id": name,
        "dataset_type": "generic",
        "repo_dir": "repo",
        "network": False,
        "problem_statement": f"{CASE_PREFIX}{name}. Write {answer} to solved.txt and commit it.",
        "eval_script": EVAL,
        "test_files": {"answer.txt": answer},
        **extra,
    }


def write_rows(folder: Path, rows: list[dict[str, Any]]) -> Path:
    """The rows' dataset (`tasks.jsonl`) and the small repository they name, in `folder`."""
    (folder / "repo").mkdir(parents=True, exist_ok=True)
    (folder / "repo" / "README.md").write_text("A task.\n")
    data = folder / "tasks.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def case_of(req: Request) -> str:
    """The case a model request belongs to: the name its problem statement gives."""
    user = next((str(m.get("content")) for m in req.body.get("messages") or [] if m.get("role") == "user"), "")
    return user.split(CASE_PREFIX, 1)[-1].split(".", 1)[0]


def play(calls_of: Callable[[str], list[Call]], answer: str) -> Callable[[Request], Reply]:
    """The scripted model: a case's calls (`calls_of(case)`), one per turn, then SOLVE, then submit."""

    def respond(req: Request) -> Reply:
        calls = [*calls_of(case_of(req)), SOLVE]
        n = req.n_assistant_turns
        if n < len(calls):
            tool, args = calls[n]
            filled = {k: (v.replace("{answer}", answer) if isinstance(v, str) else v) for k, v in args.items()}
            return Reply(tool_calls=[(tool, filled)])
        return Reply(tool_calls=[("submit", {"message": "done"})])

    return respond


def budget_config(folder: Path, **environment: Any) -> Path:
    """`folder/budgets.yaml`: the default agent on local+bwrap (sandboxes under `folder`), the scripted
    model at `${MIMO_TEST_BASE_URL}`; `environment` adds to or overrides the environment block."""
    cfg = {
        "agent": {"type": "default", "step_limit": 8, "observation_max_chars": 4000},
        "environment": {
            "environment_class": "local",
            "sandbox": "bwrap",
            "timeout": 120,
            "backend_kwargs": {"root": str(folder / "sandboxes")},
            **environment,
        },
        "model": {
            "model_name": "hostile",
            "protocol": "chat",
            "model_kwargs": {
                "base_url": "${MIMO_TEST_BASE_URL}",
                "api_key": "not-a-real-key-budgets",
                "max_output_tokens": 64,
            },
            "retry": {"max_attempts": 2, "initial_delay": 0.01, "max_delay": 0.05, "timeout": 60},
        },
    }
    path = folder / "budgets.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path
