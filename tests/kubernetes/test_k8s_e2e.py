"""End to end on pods (stand-in API server, pods backed by the test dockerd): a scripted-model rollout,
`--recalc-input gt` of the demo dataset, a separate verifier in a fresh pod, SIGTERM of a CLI run."""

from __future__ import annotations

import json
import os
import signal
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
from mimo_core.environments.kubernetes.environment import KubernetesEnvironment
from mimo_core.records.results import ResultsStore
from testkit.scripted_llm import Reply, call, turns
from testkit.tasks import write_config
from tests.core.conftest import SECRET, run_cli
from tests.docker.test_docker_e2e import _docker_dataset

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo.jsonl"
KUBE_ENV = {"environment_class": "kubernetes", "timeout": 30}


def _pods(k8s, key: str, value: str) -> list[str]:
    return [n for (_, n), p in list(k8s.pods.items()) if (p["metadata"].get("annotations") or {}).get(key) == value]


def _k8s_config(tmp_path: Path, name: str, **environment) -> Path:
    cfg_path = write_config(tmp_path, name)
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["environment"] = {**KUBE_ENV, **environment}
    cfg_path.write_text(yaml.safe_dump(cfg))
    return cfg_path


def test_swe_k8s_profile_runs_a_rollout_in_a_pod_that_reaches_the_scripted_server(
    k8s, scripted_llm, tmp_path: Path, monkeypatch
) -> None:
    """configs/swe_k8s.yaml as shipped; only its ${VAR}s point at the scripted server and a test namespace."""
    port = scripted_llm.url.rsplit(":", 1)[1].split("/")[0]
    probe = f"cat /proc/1/cmdline | tr '\\0' ' '; echo; exec 3<>/dev/tcp/127.0.0.1/{port} && echo server-reachable"
    scripted_llm.set_responder(
        turns(
            Reply(tool_calls=[("bash", {"command": probe})]),
            call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"),
            call("submit"),
        )
    )
    namespace = f"e2e-{uuid.uuid4().hex[:6]}"
    monkeypatch.setenv("OPENAI_BASE_URL", scripted_llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("MIMOAGENT_K8S_NAMESPACE", namespace)
    monkeypatch.setenv("MIMOAGENT_IMAGE_PREFIX", "docker.io/library/")  # the rows' mimo-base:bookworm, fully named
    out = tmp_path / "out"
    proc = run_cli(
        ["-c", str(REPO / "configs" / "swe_k8s.yaml"), "--dataset", str(_docker_dataset(tmp_path)), "-o", str(out)],
        scripted_llm,
    )
    assert proc.returncode == 0, proc.stderr
    [record] = ResultsStore(out).load().values()
    assert (record.exit_status, record.passed, record.steps) == ("submitted", True, 3)
    traj = json.loads((out / record.output_dir / "traj.json").read_text())
    first_obs = next(m for m in traj["messages"] if m["role"] == "tool")["content"]
    assert "while :; do sleep 86400" in first_obs and "server-reachable" in first_obs  # PID 1 is the pod's
    assert not [key for key in list(k8s.pods) if key[0] == namespace]  # created there, deleted after
    [pod] = [p for p in k8s.created if p["metadata"]["namespace"] == namespace]
    assert pod["spec"]["containers"][0]["image"] == "docker.io/library/mimo-base:bookworm"  # image_prefix applied
    assert pod["spec"]["activeDeadlineSeconds"] == 21600  # the profile's backend_kwargs reached the pod
    assert SECRET not in "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())


def test_recalc_gt_of_the_demo_dataset_passes_on_pods(k8s, scripted_llm, tmp_path: Path) -> None:
    cfg = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text())
    cfg["environment"] = {
        "environment_class": "kubernetes",
        "timeout": 120,
        "backend_kwargs": {"fallback_image": "mimo-base:bookworm"},
    }
    cfg_path = tmp_path / "demo_k8s.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "demo"
    proc = run_cli(
        ["-c", str(cfg_path), "--dataset", str(DEMO), "--recalc-input", "gt", "--workers", "4", "-o", str(out)],
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
    assert _pods(k8s, "mimoagent.config", "demo_k8s") == []


def test_separate_verifier_grades_the_patch_in_a_fresh_pod(k8s) -> None:
    [task] = [t for t in load_tasks(str(DEMO)) if getattr(t, "verifier_mode", None) == "separate"][:1]
    dtype = get_dataset_type(task.dataset_type)
    config = EnvironmentConfig(environment_class="kubernetes", backend_kwargs={"fallback_image": "mimo-base:bookworm"})
    started: list[KubernetesEnvironment] = []

    def new_env(spec: SandboxSpec) -> KubernetesEnvironment:
        env = KubernetesEnvironment(spec, config)
        started.append(env)
        env.start()
        return env

    run_id = f"pytest-verifier-{uuid.uuid4().hex[:6]}"
    spec = dtype.sandbox_spec(task, None, 60, True)
    spec.labels |= {"mimoagent.run_id": run_id, "mimoagent.instance": task.instance_id}
    agent_env = new_env(spec)
    try:
        dtype.setup(agent_env, task)
        agent_env.execute("for f in $(git ls-files '*.py' '*.sh'); do echo 'exit 3' > $f; done")  # sabotage
        gold = dtype.gold_submission(task)
        grade = dtype.grade(agent_env, task, gold, new_env)
        assert grade.passed and grade.reward == 1.0, grade
        assert grade.details["verifier_mode"] == "separate"
        shared = task.model_copy(update={"verifier_mode": "shared"})
        assert not dtype.grade(agent_env, shared, gold, new_env).passed  # the sabotage is real
        verifier = started[1]
        assert verifier.pod is None and verifier.pod != agent_env.pod  # its pod is gone once graded
        assert verifier.spec.network is False
    finally:
        for env in started:
            env.stop()
    assert len(started) == 2
    assert _pods(k8s, "mimoagent.run_id", run_id) == []


def test_sigterm_of_a_cli_run_deletes_its_pod_and_records_interrupted(k8s, scripted_llm, tmp_path: Path) -> None:
    scripted_llm.set_responder(turns(call("bash", command="sleep 60"), call("submit")))
    run_id = f"term-{uuid.uuid4().hex[:6]}"
    out = tmp_path / "out"
    args = [
        "-c",
        str(_k8s_config(tmp_path, "term", timeout=120)),
        "--dataset",
        str(_docker_dataset(tmp_path)),
        "-o",
        str(out),
        "--run-id",
        run_id,
    ]
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": scripted_llm.openai_base_url,
        "MIMO_TEST_API_KEY": "sk-x",
        "MIMOAGENT_OBSERVERS": "0",
    }
    runner = subprocess.Popen(
        [sys.executable, "-m", "mimo_core.cli", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (_pods(k8s, "mimoagent.run_id", run_id) and scripted_llm.requests):
            assert time.monotonic() < deadline and runner.poll() is None, "the runner never started a pod"
            time.sleep(0.2)
        time.sleep(1.0)  # the sleep 60 is running in the pod
        runner.send_signal(signal.SIGTERM)
        _, err = runner.communicate(timeout=60)
        assert runner.returncode == 130, err
    finally:
        if runner.poll() is None:
            runner.kill()
    assert _pods(k8s, "mimoagent.run_id", run_id) == [], err
    [record] = ResultsStore(out).load().values()
    assert record.exit_status == "interrupted"
