"""End to end on E2B sandboxes (the real `e2b` SDK against testkit/e2b_standin.py, sandboxes backed by
containers of the test dockerd): a scripted-model CLI run graded 1, and what the service refuses (a bad
API key, no API key, a template that does not exist) said once, with the right status."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import yaml

from mimo_core.records.results import ResultsStore
from testkit.scripted_llm import Reply, call, turns
from testkit.tasks import write_config
from tests.core.conftest import SECRET, run_cli
from tests.docker.test_docker_e2e import _docker_dataset


def _e2b_config(tmp_path: Path, name: str, backend: str = "e2b", **kwargs) -> Path:
    cfg_path = write_config(tmp_path, name)
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["environment"] = {"environment_class": backend, "timeout": 30, "backend_kwargs": kwargs}
    cfg_path.write_text(yaml.safe_dump(cfg))
    return cfg_path


def _ours(e2b, name: str) -> list[str]:
    return [b.id for b in list(e2b.sandboxes.values()) if b.metadata.get("mimoagent.config") == name]


def test_a_cli_run_on_e2b_is_graded_in_the_sandbox(e2b, scripted_llm, tmp_path: Path) -> None:
    scripted_llm.set_responder(
        turns(
            Reply(tool_calls=[("bash", {"command": "echo $$ > /tmp/shell; cat greeting.txt; ls /proc/1/exe -l"})]),
            call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"),
            call("submit"),
        )
    )
    name = f"e2b_{uuid.uuid4().hex[:6]}"
    out = tmp_path / "out"
    before = len(e2b.created)
    args = ["-c", str(_e2b_config(tmp_path, name)), "--dataset", str(_docker_dataset(tmp_path)), "-o", str(out)]
    proc = run_cli(args, scripted_llm, timeout=180)
    assert proc.returncode == 0, proc.stderr
    [record] = ResultsStore(out).load().values()
    assert (record.exit_status, record.reward, record.steps) == ("submitted", 1.0, 3)
    traj = json.loads((out / record.output_dir / "traj.json").read_text())
    first_obs = next(m for m in traj["messages"] if m["role"] == "tool")["content"]
    assert "hello" in first_obs
    [body] = [b for b in e2b.created[before:] if b["metadata"].get("mimoagent.config") == name]
    assert body["templateID"] == "mimo-base-bookworm"  # the template named after the row's image
    assert {"mimoagent.run_id", "mimoagent.pid", "mimoagent.host"} <= set(body["metadata"])  # what cleanup finds
    assert _ours(e2b, name) == [] and e2b.containers(**{"mimoagent.config": name}) == []  # killed after
    text = "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert e2b.api_key not in text and SECRET not in text


def test_a_bad_or_missing_api_key_is_one_line_before_any_rollout(
    e2b, scripted_llm, tmp_path: Path, monkeypatch
) -> None:
    cfg, data = _e2b_config(tmp_path, "e2b_key"), _docker_dataset(tmp_path)
    before = len(e2b.created)
    for key, said in (("e2b_wrong", "refused the key in E2B_API_KEY"), ("", "E2B_API_KEY is not set")):
        out = tmp_path / f"out-{key or 'none'}"
        monkeypatch.setenv("E2B_API_KEY", key)
        proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm)
        assert proc.returncode == 2, proc.stderr
        assert said in proc.stderr and "Traceback" not in proc.stderr
        assert not (out / "results.jsonl").exists() or ResultsStore(out).load() == {}
    assert len(e2b.created) == before  # no sandbox was asked for
    assert ("GET", "/v2/sandboxes") in e2b.requests  # the key was tried on the API (the sweep's listing)


def test_an_unknown_template_is_the_datasets_error_not_the_infrastructures(e2b, scripted_llm, tmp_path: Path) -> None:
    data = _docker_dataset(tmp_path)
    rows = [json.loads(line) | {"image": "no-such-image:1"} for line in data.read_text().splitlines()]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    asked = len(scripted_llm.requests)
    args = ["-c", str(_e2b_config(tmp_path, "e2b_tmpl")), "--dataset", str(data), "-o", str(out)]
    run_cli(args, scripted_llm)
    [record] = ResultsStore(out).load().values()
    assert record.exit_status == "dataset_error", (record.exit_status, record.error)
    assert "no-such-image-1" in (record.error or "") and "does not exist" in (record.error or "")
    assert len(scripted_llm.requests) == asked  # the model was never called


def test_cube_needs_its_url_and_otherwise_speaks_the_same_api(e2b, scripted_llm, tmp_path: Path, monkeypatch) -> None:
    data = _docker_dataset(tmp_path)
    monkeypatch.delenv("E2B_API_URL")
    args = ["-c", str(_e2b_config(tmp_path, "cube_nourl", "cube")), "--dataset", str(data), "-o", str(tmp_path / "a")]
    proc = run_cli(args, scripted_llm)
    assert proc.returncode == 2 and "environment_class cube: no API URL" in proc.stderr, proc.stderr
    from mimo_core.config import EnvironmentConfig
    from mimo_core.environments.base import SandboxSpec
    from mimo_core.environments.registry import make_environment

    config = EnvironmentConfig(environment_class="cube", backend_kwargs={"api_url": e2b.api_url})
    env = make_environment(config, SandboxSpec(image="mimo-base:bookworm", labels={"mimoagent.config": "cube_ok"}))
    try:
        env.start()
        assert env.execute("echo in-cube; pwd").output == "in-cube\n/testbed\n"
    finally:
        env.stop()
    assert _ours(e2b, "cube_ok") == []


def test_the_demo_graded_by_its_reference_solutions_on_e2b(e2b, scripted_llm, tmp_path: Path) -> None:
    """`--recalc-input gt` of three demo rows (a DeepSWE-style separate verifier, a generic row, an
    opensource-code row): each reference graded 1, the separate verifier in a fresh sandbox, three at once."""
    cfg = yaml.safe_load((Path(__file__).resolve().parents[2] / "configs" / "demo.yaml").read_text())
    demo = Path(__file__).resolve().parents[2] / "examples" / "demo.jsonl"
    images = {json.loads(line).get("image") for line in demo.read_text().splitlines()} - {None}
    cfg["environment"] = {  # the templates a user would build from the rows' images: here all the base image
        "environment_class": "e2b",
        "timeout": 120,
        "backend_kwargs": {
            "fallback_template": "mimo-base-bookworm",
            "templates": dict.fromkeys(images, "mimo-base-bookworm"),
        },
    }
    cfg_path = tmp_path / "demo_e2b.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "demo"
    args = ["-c", str(cfg_path), "--dataset", str(demo), "--recalc-input", "gt", "--workers", "3", "-o", str(out)]
    args += ["--filter", "^(py-slugify-edges|generic-fizzbuzz|oss-roman-subtractive)$"]
    proc = run_cli(args, scripted_llm, timeout=400)
    assert proc.returncode == 0, proc.stderr
    records = ResultsStore(out).load()
    assert len(records) == 3
    assert {k[0]: (r.exit_status, r.reward, r.error) for k, r in records.items() if not r.passed} == {}
    modes = {
        json.loads((out / r.output_dir / "reward_extra_info.json").read_text()).get("verifier_mode")
        for r in records.values()
    }
    assert "separate" in modes
    assert _ours(e2b, "demo_e2b") == []
