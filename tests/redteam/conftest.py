"""One real CLI run per backend of every attack (attacks.py) against a host that counts (world.py).

The scripted model plays the hostile agent: it reads the case from the task's prompt and sends that
case's tool calls, then submits. Each backend's run happens once per session, when its first test asks;
the tests then read its record. The run uses the shipped training setting for the backend (local:
`sandbox: bwrap`; docker and kubernetes as configured by default), a network-less row unless the attack
asks for network, and no Dagster recording.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from testkit.scripted_llm import Reply, Request, ScriptedLLM
from tests.host_needs import need_bwrap, unavailable
from tests.redteam.attacks import ATTACKS, Attack, fill
from tests.redteam.world import World, processes_with

REPO = Path(__file__).resolve().parents[2]
EVAL = (
    'mkdir -p /logs/verifier; if [ "$(cat solved.txt 2>/dev/null)" = "$(cat /tests/answer.txt)" ]; '
    "then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi"
)
VERDICT = json.dumps({"scores": [{"index": 1, "score": 1, "reason": "looks done"}]})


@dataclass
class Outcome:
    """What one backend's run left: records by instance, every byte it wrote, what the model was sent."""

    world: World
    backend: str
    returncode: int
    stderr: str
    records: dict[str, dict[str, Any]]
    written: str  # every file under the output folder, as text
    sent_to_model: str  # every request body the model server received
    requests: list[Request]
    before: dict[str, str]  # the canary folder before the run
    after: dict[str, str]
    leftover_processes: list[str]
    leftover_sandboxes: list[str]
    out: Path
    results_text: str

    def tool_outputs(self) -> dict[str, str]:
        """Per case: every tool result the model was sent (what the agent got to see)."""
        seen: dict[str, str] = {}
        for r in self.requests:
            messages = r.body.get("messages") or []
            user = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
            case = user.split("Red-team case ", 1)[-1].split(".", 1)[0]
            text = "\n".join(str(m.get("content")) for m in messages if m.get("role") == "tool")
            seen[case] = seen.get(case, "") + text
        return seen


def _rows(world: World, backend: str, image: str | None) -> list[dict[str, Any]]:
    rows = []
    gold = (
        "diff --git a/solved.txt b/solved.txt\nnew file mode 100644\n--- /dev/null\n+++ b/solved.txt\n"
        f"@@ -0,0 +1 @@\n+{world.answer}\n"
    )
    for attack in ATTACKS:
        if backend not in attack.backends:
            continue
        ask = f"Write {world.answer} to solved.txt and commit it." if attack.solvable else "Make the verifier pass."
        row: dict[str, Any] = {
            "instance_id": attack.name,
            "dataset_type": "generic",
            "repo_dir": "repo",
            "network": False,
            "problem_statement": f"Red-team case {attack.name}. {ask}",
            "eval_script": EVAL,
            "test_files": {"answer.txt": world.answer},
            "gold_patch": gold,
            **attack.row,
        }
        if image:
            row["image"] = image
        if attack.judge is not None:
            row["rubric"] = {"rubrics": ["The agent did what the task asked."]}
        rows.append(row)
    return rows


def _responder(world: World, values: dict[str, str]) -> Any:
    by_name = {a.name: a for a in ATTACKS}

    def respond(req: Request) -> Reply:
        messages = req.body.get("messages") or []
        system = str(messages[0].get("content")) if messages else ""
        user = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
        name = user.split("Red-team case ", 1)[-1].split(".", 1)[0]
        attack: Attack | None = by_name.get(name)
        calls = (
            (attack.judge or [])
            if attack is not None and "strict reviewer" in system
            else (attack.calls if attack is not None else [])
        )
        n = req.n_assistant_turns
        if n < len(calls):
            tool, args = calls[n]
            return Reply(tool_calls=[(tool, fill(args, values))])
        return Reply(tool_calls=[("submit", {"message": VERDICT})])

    return respond


def _config(folder: Path, backend: str, extra_env: dict[str, Any]) -> Path:
    model = {
        "model_name": "hostile",
        "protocol": "chat",
        "model_kwargs": {
            "base_url": "${MIMO_TEST_BASE_URL}",
            "api_key": "${MIMO_TEST_API_KEY}",
            "max_output_tokens": 64,
        },
        "retry": {"max_attempts": 2, "initial_delay": 0.01, "max_delay": 0.05, "timeout": 30},
    }
    environment: dict[str, Any] = {
        "timeout": 30,
        **extra_env,
        "judge_agent": {"agent": {"type": "judge", "step_limit": 6}, "model": model},
    }
    cfg = {
        "agent": {
            "type": "default",
            "step_limit": 6,
            "tools": [{"tool": "bash"}, {"tool": "read"}, {"tool": "write"}, {"tool": "edit"}, {"tool": "submit"}],
        },
        "environment": environment,
        "model": model,
    }
    path = folder / f"redteam-{backend}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _texts(folder: Path) -> str:
    parts = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            parts.append(path.read_bytes().decode("utf-8", errors="replace"))
    return "\n".join(parts)


def _backend_setup(backend: str, folder: Path) -> tuple[dict[str, Any], dict[str, str], str | None, Any]:
    """(environment block, process environment, image, what to stop after)."""
    if backend == "local-bwrap":
        need_bwrap()
        from mimo_core.environments.local.cgroups import parent_dirs

        if "pids" not in parent_dirs():  # the fork bomb would run unbounded until the sandbox is killed
            unavailable("no writable pids cgroup for the sandboxes' pids_limit")
        return (
            {
                "environment_class": "local",
                "sandbox": "bwrap",
                "backend_kwargs": {"root": str(folder / "sandboxes"), "pids_limit": 256},
            },
            {},
            None,
            None,
        )
    if os.geteuid() != 0:
        unavailable("starting a private dockerd needs root")
    from testkit.dockerd import BASE_IMAGE, use_dockerd

    engine = use_dockerd()
    info = engine.__enter__()
    if backend == "docker":
        return (
            {"environment_class": "docker", "backend_kwargs": {"pids_limit": 256}},
            {"DOCKER_HOST": info.docker_host},
            BASE_IMAGE,
            engine,
        )
    from testkit.k8s_standin import StandIn

    standin = StandIn(info.docker_host, pod_network="bridge")  # pods get networks of their own, as in a cluster
    standin.start()
    kubeconfig = standin.write_kubeconfig(folder / "kubeconfig")

    class _Both:
        def __exit__(self, *exc: object) -> None:
            standin.stop()
            engine.__exit__(None, None, None)

    return (
        {"environment_class": "kubernetes", "startup_timeout": 120},
        {"KUBECONFIG": str(kubeconfig), "DOCKER_HOST": info.docker_host},
        BASE_IMAGE,
        _Both(),
    )


def _leftover_sandboxes(backend: str, run_id: str, folder: Path, proc_env: dict[str, str]) -> list[str]:
    if backend == "local-bwrap":
        root = folder / "sandboxes"
        return sorted(p.name for p in root.iterdir()) if root.exists() else []
    import docker

    client = docker.DockerClient(base_url=proc_env["DOCKER_HOST"], version="auto")
    try:
        key = "mimoagent.run_id" if backend == "docker" else "k8s-standin/mimoagent.run_id"
        containers = client.containers.list(all=True, filters={"label": f"{key}={run_id}"})
        stray = client.containers.list(all=True, filters={"name": "pwn-"})
        return [c.name for c in containers + stray]
    finally:
        client.close()


def run_backend(backend: str) -> Outcome:
    world = World.make()
    folder = Path(tempfile.mkdtemp(prefix=".mimo-redteam-run-", dir=Path.home()))
    (folder / "repo").mkdir()
    (folder / "repo" / "README.md").write_text("Nothing to see here.\n")
    env_block, proc_env, image, stopper = _backend_setup(backend, folder)
    try:
        data, out = folder / "tasks.jsonl", folder / "out"
        rows = _rows(world, backend, image)
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        cfg = _config(folder, backend, env_block)
        run_id = f"redteam-{backend}-{secrets.token_hex(3)}"
        with ScriptedLLM() as llm:
            values = world.values(dataset=str(data), outdir=str(out), answer="not-known", llm_port=str(llm.address[1]))
            values["answer"] = world.answer  # only the solvable case's own prompt gives it
            llm.set_responder(_responder(world, values))
            before = world.listing()
            env = {
                **os.environ,
                **proc_env,
                "MIMO_TEST_BASE_URL": llm.openai_base_url,
                "MIMO_TEST_API_KEY": world.key,
                "MIMOAGENT_OBSERVERS": "0",
            }
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "mimo_core.cli",
                    "-c",
                    str(cfg),
                    "--dataset",
                    str(data),
                    "-o",
                    str(out),
                    "--workers",
                    "3",
                    "--run-id",
                    run_id,
                ],
                cwd=REPO,
                env=env,
                text=True,
                capture_output=True,
                timeout=1500,
            )
            requests = list(llm.requests)
        records = {}
        results = out / "results.jsonl"
        results_text = results.read_text() if results.exists() else ""
        for line in results_text.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and "instance_id" in rec:
                records[rec["instance_id"]] = rec
        return Outcome(
            world=world,
            backend=backend,
            returncode=proc.returncode,
            stderr=proc.stderr[-4000:],
            records=records,
            written=_texts(out),
            sent_to_model="\n".join(r.raw.decode(errors="replace") for r in requests),
            requests=requests,
            before=before,
            after=world.listing(),
            leftover_processes=processes_with(world.tag),
            leftover_sandboxes=_leftover_sandboxes(backend, run_id, folder, proc_env),
            out=out,
            results_text=results_text,
        )
    finally:
        if stopper is not None:
            stopper.__exit__(None, None, None)
        shutil.rmtree(folder, ignore_errors=True)


_outcomes: dict[str, Outcome] = {}


@pytest.fixture
def outcome(request: pytest.FixtureRequest) -> Iterator[Outcome]:
    backend = request.node.callspec.params["backend"]
    if backend not in _outcomes:
        _outcomes[backend] = run_backend(backend)
    yield _outcomes[backend]


def pytest_sessionfinish(session: pytest.Session) -> None:
    for o in _outcomes.values():
        o.world.close()
