"""End to end on Docker: a scripted-model rollout, `--recalc-input gt` of the demo, a separate verifier."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import yaml

from mimo_core.config import EnvironmentConfig
from mimo_core.datasets.loader import load_tasks
from mimo_core.datasets.registry import get_dataset_type
from mimo_core.environments.base import SandboxSpec
from mimo_core.environments.docker.environment import DockerEnvironment
from mimo_core.records.results import ResultsStore
from testkit.scripted_llm import Reply, call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import run_cli

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo.jsonl"


def _docker_dataset(folder: Path) -> Path:
    """The core e2e task (a greeting to change), its rows pointed at the base image."""
    data = write_tasks(folder)
    rows = [json.loads(line) | {"image": "mimo-base:bookworm"} for line in data.read_text().splitlines()]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def _mimo_containers(client, config_name: str) -> list:
    return client.containers.list(all=True, filters={"label": f"mimoagent.config={config_name}"})


def test_rollout_runs_in_a_container_and_reaches_the_scripted_server(
    dockerd, docker_client, scripted_llm, tmp_path: Path
) -> None:
    port = scripted_llm.url.rsplit(":", 1)[1].split("/")[0]
    probe = f"test -f /.dockerenv && echo in-container; exec 3<>/dev/tcp/127.0.0.1/{port} && echo server-reachable"
    scripted_llm.set_responder(
        turns(
            Reply(tool_calls=[("bash", {"command": probe})]),
            call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"),
            call("submit"),
        )
    )
    data = _docker_dataset(tmp_path)
    name = f"dock_{uuid.uuid4().hex[:6]}"
    cfg_path = write_config(tmp_path, name)
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["environment"] = {
        "environment_class": "docker",
        "timeout": 30,
        "backend_kwargs": {"network_mode": "host"},
    }  # the container sees 127.0.0.1
    cfg_path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "out"
    proc = run_cli(["-c", str(cfg_path), "--dataset", str(data), "-o", str(out)], scripted_llm)
    assert proc.returncode == 0, proc.stderr
    [record] = ResultsStore(out).load().values()
    assert (record.exit_status, record.passed, record.steps) == ("submitted", True, 3)
    traj = json.loads((out / record.output_dir / "traj.json").read_text())
    first_obs = next(m for m in traj["messages"] if m["role"] == "tool")["content"]
    assert "in-container\nserver-reachable" in first_obs
    assert _mimo_containers(docker_client, name) == []


def test_recalc_gt_of_the_demo_dataset_passes_on_docker(dockerd, docker_client, scripted_llm, tmp_path: Path) -> None:
    out = tmp_path / "demo"
    proc = run_cli(
        [
            "-c",
            "configs/demo_docker.yaml",
            "--dataset",
            str(DEMO),
            "--recalc-input",
            "gt",
            "--workers",
            "4",
            "-o",
            str(out),
        ],
        scripted_llm,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    records = ResultsStore(out).load()
    assert len(records) == len(DEMO.read_text().splitlines())
    failed = {k[0]: (r.exit_status, r.reward) for k, r in records.items() if not r.passed}
    assert failed == {}
    modes = {
        json.loads((out / r.output_dir / "reward_extra_info.json").read_text()).get("verifier_mode")
        for r in records.values()
    }
    assert "separate" in modes
    assert _mimo_containers(docker_client, "demo_docker") == []


def test_separate_verifier_grades_the_patch_in_a_fresh_container(dockerd, docker_client) -> None:
    [task] = [t for t in load_tasks(str(DEMO)) if getattr(t, "verifier_mode", None) == "separate"][:1]
    dtype = get_dataset_type(task.dataset_type)
    config = EnvironmentConfig(environment_class="docker", backend_kwargs={"fallback_image": "mimo-base:bookworm"})
    started: list[DockerEnvironment] = []

    def new_env(spec: SandboxSpec) -> DockerEnvironment:
        env = DockerEnvironment(spec, config)
        started.append(env)
        env.start()
        return env

    run_id = f"pytest-verifier-{uuid.uuid4().hex[:6]}"
    spec = dtype.sandbox_spec(task, None, 60, True)
    spec.labels |= {"mimoagent.run_id": run_id, "mimoagent.instance": task.instance_id}
    agent_env = new_env(spec)
    try:
        dtype.setup(agent_env, task)
        # Sabotage the agent's sandbox: a shared verifier would see this, a separate one must not.
        agent_env.execute("for f in $(git ls-files '*.py' '*.sh'); do echo 'exit 3' > $f; done")
        gold = dtype.gold_submission(task)
        grade = dtype.grade(agent_env, task, gold, new_env)
        assert grade.passed and grade.reward == 1.0, grade
        assert grade.details["verifier_mode"] == "separate"
        shared = task.model_copy(update={"verifier_mode": "shared"})
        assert not dtype.grade(agent_env, shared, gold, new_env).passed  # the sabotage is real
        verifier = started[1]
        assert verifier.container is None  # the verifier's container is gone once graded
        assert verifier.spec.network is False
        wrong = dtype.grade(agent_env, task, "", new_env)
        assert not wrong.passed
    finally:
        for env in started:
            env.stop()
    assert len(started) == 3  # the agent's sandbox and one fresh verifier per separate grading
    assert docker_client.containers.list(all=True, filters={"label": f"mimoagent.run_id={run_id}"}) == []


def test_rerun_after_sigkill_of_the_runner_leaves_no_container_of_the_killed_run(
    dockerd, docker_client, scripted_llm, tmp_path: Path
) -> None:
    scripted_llm.set_responder(turns(call("bash", command="sleep 60"), call("submit")))
    data = _docker_dataset(tmp_path)
    cfg_path = write_config(tmp_path, "killed")
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["environment"] = {"environment_class": "docker", "timeout": 120}
    cfg_path.write_text(yaml.safe_dump(cfg))
    run_id = f"killed-{uuid.uuid4().hex[:6]}"
    args = ["-c", str(cfg_path), "--dataset", str(data), "-o", str(tmp_path / "out")]
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": scripted_llm.openai_base_url,
        "MIMO_TEST_API_KEY": "sk-x",
        "MIMOAGENT_OBSERVERS": "0",
    }
    runner = subprocess.Popen(
        [sys.executable, "-m", "mimo_core.cli", *args, "--run-id", run_id],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not docker_client.containers.list(filters={"label": f"mimoagent.run_id={run_id}"}):
            assert time.monotonic() < deadline and runner.poll() is None, "the runner never started a container"
            time.sleep(0.2)
    finally:
        runner.kill()
        runner.wait()
    assert docker_client.containers.list(all=True, filters={"label": f"mimoagent.run_id={run_id}"})
    scripted_llm.set_responder(turns(call("submit")))
    proc = run_cli([*args, "--redo-existing"], scripted_llm)
    assert proc.returncode == 0, proc.stderr
    assert docker_client.containers.list(all=True, filters={"label": f"mimoagent.run_id={run_id}"}) == []
