"""A pod's budgets: past its memory limit (the kubelet's OOMKilled) or its ephemeral-storage limit (the
kubelet's eviction) the pod ends and the backend says which budget; a rollout that did it is the agent's
0 (`agent_error`, reward 0, `budget_exceeded` recorded), never an infrastructure error, and an honest
row beside it scores 1.

The kubelet here is the stand-in's (testkit/k8s_standin_kubelet.py): its statuses follow the kubelet's
source, never a real cluster's."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from mimo_core.errors import SandboxError
from testkit.dockerd import BASE_IMAGE
from testkit.scripted_llm import Reply, Request, ScriptedLLM

REPO = Path(__file__).resolve().parents[2]
FORK_ALLOCATE = "for i in $(seq 8); do (head -c 100M /dev/zero | tail -c 100M > /dev/null) & done; wait; echo ok"
EVAL = (
    'mkdir -p /logs/verifier; if [ "$(cat solved.txt 2>/dev/null)" = "$(cat /tests/answer.txt)" ]; '
    "then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi"
)


def _ended_for(env: Any, seconds: float = 15.0) -> Any:
    """The budget the pod was ended for, once its status says so (the kubelet acts within seconds)."""
    deadline = time.monotonic() + seconds
    while (over := env.budget_exceeded()) is None and time.monotonic() < deadline:
        time.sleep(0.25)
    return over


def test_a_pod_past_its_memory_is_oomkilled_and_says_so(make_k8s_env) -> None:
    env = make_k8s_env(memory_mb=128)
    assert env.execute("head -c 50M /dev/zero | tail -c 50M > /dev/null; echo ok").output == "ok\n"
    time.sleep(1.0)  # the kubelet looked at least once
    assert env.budget_exceeded() is None  # within it
    env.execute(FORK_ALLOCATE, timeout=60)
    over = _ended_for(env)
    assert over is not None and over.kind == "memory", over
    assert "memory budget (128 MB)" in over.detail and "OOMKilled" in over.detail
    pod = env.core.read_namespaced_pod(env.pod, env.namespace)
    assert pod.status.phase == "Failed"
    assert pod.status.container_statuses[0].state.terminated.reason == "OOMKilled"
    with pytest.raises(SandboxError):
        env.execute("echo still here", timeout=30)


def test_a_pod_past_its_ephemeral_storage_is_evicted_and_says_so(make_k8s_env) -> None:
    env = make_k8s_env(storage_mb=100)
    assert env.execute("head -c 20M /dev/zero > /tmp/small; echo ok").output == "ok\n"
    time.sleep(1.5)  # the kubelet measured at least once
    assert env.budget_exceeded() is None
    env.execute("head -c 150M /dev/zero > /tmp/big; echo rc=$?", timeout=60)
    over = _ended_for(env)
    assert over is not None and over.kind == "disk", over
    assert "disk budget (100 MB)" in over.detail and "ephemeral local storage" in over.detail
    pod = env.core.read_namespaced_pod(env.pod, env.namespace)
    assert (pod.status.phase, pod.status.reason) == ("Failed", "Evicted")
    with pytest.raises(SandboxError):
        env.execute("echo still here", timeout=30)


# -- through the real CLI -----------------------------------------------------------------------------

HOSTILE = {
    "oom": ("memory", FORK_ALLOCATE, {"memory_mb": 128}),
    "evicted": ("disk", "head -c 150M /dev/zero > $HOME/big; echo rc=$?", {"storage_mb": 100}),
}


def _case(req: Request) -> str:
    user = next((str(m.get("content")) for m in req.body.get("messages") or [] if m.get("role") == "user"), "")
    return user.split("Budget case ", 1)[-1].split(".", 1)[0]


@pytest.fixture(scope="module")
def cli_run(k8s: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("k8s-budgets")
    (folder / "repo").mkdir()
    (folder / "repo" / "README.md").write_text("A task.\n")
    answer = secrets.token_hex(6)
    rows = [
        {
            "instance_id": name,
            "dataset_type": "generic",
            "repo_dir": "repo",
            "image": BASE_IMAGE,
            "network": False,
            "eval_script": EVAL,
            "problem_statement": f"Budget case {name}. Write {answer} to solved.txt.",
            "test_files": {"answer.txt": answer},
            **(HOSTILE[name][2] if name in HOSTILE else {}),
        }
        for name in [*HOSTILE, "honest"]
    ]
    data, out = folder / "tasks.jsonl", folder / "out"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = folder / "budgets-k8s.yaml"
    model = {
        "model_name": "hostile",
        "protocol": "chat",
        "model_kwargs": {"base_url": "${MIMO_TEST_BASE_URL}", "api_key": "not-a-real-key", "max_output_tokens": 64},
        "retry": {"max_attempts": 2, "initial_delay": 0.01, "max_delay": 0.05, "timeout": 60},
    }
    environment = {"environment_class": "kubernetes", "timeout": 60, "startup_timeout": 120}
    cfg.write_text(
        yaml.safe_dump({"agent": {"type": "default", "step_limit": 6}, "environment": environment, "model": model})
    )

    def respond(req: Request) -> Reply:
        name = _case(req)
        calls = [*([HOSTILE[name][1]] if name in HOSTILE else []), f"echo {answer} > solved.txt && echo solved"]
        if req.n_assistant_turns < len(calls):
            return Reply(tool_calls=[("bash", {"command": calls[req.n_assistant_turns]})])
        return Reply(tool_calls=[("submit", {"message": "done"})])

    with ScriptedLLM() as llm:
        llm.set_responder(respond)
        env = {**os.environ, "MIMO_TEST_BASE_URL": llm.openai_base_url, "MIMOAGENT_OBSERVERS": "0"}
        argv = [sys.executable, "-m", "mimo_core.cli", "-c", str(cfg), "--dataset", str(data), "-o", str(out)]
        argv += ["--workers", "3", "--run-id", f"k8sbudgets-{secrets.token_hex(3)}"]
        proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    results = out / "results.jsonl"
    records = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    return {"proc": proc, "records": {r["instance_id"]: r for r in records}, "out": out}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_rollout_whose_pod_went_past_its_budget_is_the_agents_0(cli_run: dict[str, Any], case: str) -> None:
    assert cli_run["proc"].returncode == 0, cli_run["proc"].stderr[-3000:]
    rec = cli_run["records"][case]
    kind = HOSTILE[case][0]
    assert (rec["exit_status"], rec["reward"]) == ("agent_error", 0.0), rec
    assert rec["grading"]["budget_exceeded"] == kind, rec
    assert rec["error"].startswith(f"{kind} budget exceeded: "), rec["error"]
    extra = json.loads((cli_run["out"] / rec["output_dir"] / "reward_extra_info.json").read_text())
    assert extra["budget_exceeded"] == kind and extra["reward"] == 0.0


def test_an_honest_rollout_beside_them_scores_1(cli_run: dict[str, Any]) -> None:
    rec = cli_run["records"]["honest"]
    assert (rec["exit_status"], rec["reward"]) == ("submitted", 1.0), rec
