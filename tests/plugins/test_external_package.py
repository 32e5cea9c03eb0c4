"""A third-party plug-in package, installed for real: tests/plugins/example_plugin (a backend, an agent loop,
a dataset type and tools, each an entry point) goes into a fresh virtualenv beside the mimoagent wheel, and
`mimoagent` from that venv runs a rollout whose config and row name all four, against the scripted model.
Nothing of the checkout is on that venv's path: what runs is what a user who pip-installed both gets."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from mimo_core import plugins
from testkit.scripted_llm import ScriptedLLM, call, turns
from testkit.tasks import EVAL
from tests.package.fresh_venv import build_wheel, runtime_venv

EXAMPLE = Path(__file__).resolve().parent / "example_plugin"
SOURCE = "mimo-example-plugin 0.1.0"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("plugin-venv")
    (folder / "wheel").mkdir()
    return runtime_venv(folder, build_wheel(folder / "wheel"), str(EXAMPLE))


def _mimoagent(venv: Path, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    environ.update({"MIMOAGENT_OBSERVERS": "0", "MIMO_TEST_API_KEY": "k", **env})
    return subprocess.run(
        [str(venv / "bin" / "mimoagent"), *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=300
    )


def _config(folder: Path, name: str = "cfg", **patch: dict) -> Path:
    cfg = {
        "agent": {
            "type": "tiny-loop",
            "step_limit": 6,
            "tools": [{"tool": "shout", "config": {"suffix": "!!"}}, {"tool": "bash"}, {"tool": "submit"}],
        },
        "environment": {
            "environment_class": "marked-local",
            "timeout": 30,
            "backend_kwargs": {"marker": str(folder / "marker.txt"), "root": str(folder / "sandboxes")},
        },
        "model": {
            "model_name": "scripted-model",
            "protocol": "chat",
            "model_kwargs": {"base_url": "${MIMO_TEST_BASE_URL}", "api_key": "${MIMO_TEST_API_KEY}"},
            "retry": {"max_attempts": 2, "initial_delay": 0.01, "max_delay": 0.05, "timeout": 10},
        },
    }
    for block, values in patch.items():
        cfg[block] = {**cfg[block], **values}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _dataset(folder: Path) -> Path:
    (folder / "repo").mkdir(exist_ok=True)
    (folder / "repo" / "greeting.txt").write_text("hello\n")
    row = {
        "instance_id": "plug-1",
        "dataset_type": "noted",
        "note": "carried by the noted type",
        "repo_dir": "repo",
        "eval_script": EVAL,
        "problem_statement": "Make greeting.txt say goodbye.",
    }
    path = folder / "tasks.jsonl"
    path.write_text(json.dumps(row) + "\n")
    return path


def test_a_rollout_runs_on_the_packages_backend_agent_dataset_type_and_tool(venv: Path, tmp_path: Path) -> None:
    script = turns(call("shout", text="hello"), call("bash", command="echo goodbye > greeting.txt"), call("submit"))
    with ScriptedLLM(script) as llm:
        out = tmp_path / "out"
        proc = _mimoagent(
            venv,
            tmp_path,
            *("-c", str(_config(tmp_path)), "--dataset", str(_dataset(tmp_path)), "-o", str(out)),
            MIMO_TEST_BASE_URL=llm.openai_base_url,
        )
        requests = [r.body for r in llm.requests]
    assert proc.returncode == 0, proc.stderr
    [record] = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert (record["dataset_type"], record["agent_type"], record["exit_status"]) == ("noted", "tiny-loop", "submitted")
    assert record["reward"] == 1.0 and record["passed"] is True
    assert record["grading"]["row_note"] == "carried by the noted type"  # the dataset type graded it
    # The agent is the package's loop: its own system prompt, the config's tools in their order
    assert len(requests) == 3
    assert requests[0]["messages"][0]["content"].startswith("You are the tiny-loop agent")
    assert [t["function"]["name"] for t in requests[0]["tools"]] == ["shout", "bash", "submit"]
    # The tool ran, with its config, in the package's backend, and its output reached the model
    tool_turn = [m for m in requests[1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_turn] == ["HELLO!! (in MarkedLocalEnvironment)"]
    # The backend started the sandboxes: the agent's and the verifier's marks
    marks = (tmp_path / "marker.txt").read_text().splitlines()
    assert marks and all(m.startswith(f"started {tmp_path / 'sandboxes'}") for m in marks), marks
    traj = json.loads((out / record["output_dir"] / "traj.json").read_text())
    assert traj["agent_type"] == "tiny-loop" and traj["messages"][-1]["role"] == "tool"


def test_plugins_lists_the_packages_entry_points_and_checks_them(venv: Path, tmp_path: Path) -> None:
    proc = _mimoagent(venv, tmp_path, "plugins")
    assert proc.returncode == 0, proc.stderr
    lines = [" ".join(line.split()) for line in proc.stdout.splitlines()]
    for line in (
        f"marked-local {SOURCE} mimo_example_plugin.backend:MarkedLocalEnvironment",
        f"tiny-loop {SOURCE} mimo_example_plugin.agent:TinyLoopAgent",
        f"noted {SOURCE} mimo_example_plugin.dataset:NotedDatasetType",
        f"shout {SOURCE} mimo_example_plugin.tool:ShoutTool",
        f"fancy {SOURCE} mimo_example_plugin.fancy:FancyTool",
        "local built in mimo_core.environments.local.environment:LocalEnvironment",
        "dagster mimoagent 0.1.0 mimo_assets.cli_recording.observer:DagsterObserver",
        "swe-bench alias of opensource-code",
    ):
        assert line in lines, (line, proc.stdout)
    assert "environments (environment_class; entry points: mimoagent.environments)" in lines
    checked = _mimoagent(venv, tmp_path, "plugins", "--check", "--kind", "tools")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    by_name = {line.split()[0]: line for line in checked.stdout.splitlines()[1:]}
    assert by_name["shout"].endswith("[ok]") and by_name["bash"].endswith("[ok]")
    assert "cannot load: MissingDependency: tool 'fancy' needs the module 'mimo_example_absent'" in by_name["fancy"]
    assert by_name["fancy"].endswith("pip install 'mimo-example-plugin[fancy]']")


def test_configs_naming_plugins_are_checked_at_load(venv: Path, tmp_path: Path) -> None:
    """An unknown name lists the package's names among the known ones; a plug-in whose extra is not
    installed names the install; the backend's own options are checked like a built-in's. Each before any
    sandbox starts, in one line naming the file and the key."""
    data = _dataset(tmp_path)
    backends, agents = [*plugins.BUILT_INS["environments"], "marked-local"], [*plugins.BUILT_INS["agents"], "tiny-loop"]
    cases = {
        "typo": (
            _config(tmp_path, "typo", environment={"environment_class": "marked-locl"}),
            "typo.yaml: environment.environment_class: unknown environment_class 'marked-locl'; "
            f"known: {backends} or 'package.module:Class'",
        ),
        "agent": (
            _config(tmp_path, "agent", agent={"type": "tiny-lop"}),
            f"agent.yaml: agent.type: unknown agent type 'tiny-lop'; known: {agents}",
        ),
        "extra": (
            _config(tmp_path, "extra", agent={"tools": [{"tool": "fancy"}]}),
            "extra.yaml: agent.tools[0].tool: cannot load 'fancy': tool 'fancy' needs the module "
            "'mimo_example_absent', which is not installed: pip install 'mimo-example-plugin[fancy]'",
        ),
        "options": (
            _config(tmp_path, "options", environment={"backend_kwargs": {"root": str(tmp_path)}}),
            "options.yaml: environment.backend_kwargs (marked-local): marker: Field required",
        ),
        "tool_config": (
            _config(tmp_path, "tool_config", agent={"tools": [{"tool": "shout", "config": {"sufix": "?"}}]}),
            "tool_config.yaml: agent.tools[0].config: sufix: unknown key (known keys for shout: ['suffix'])",
        ),
    }
    for name, (config, message) in cases.items():
        args = ("-c", str(config), "--dataset", str(data), "-o", str(tmp_path / name))
        proc = _mimoagent(venv, tmp_path, *args, MIMO_TEST_BASE_URL="http://127.0.0.1:9/v1")
        assert proc.returncode == 2, (name, proc.stderr)
        assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, (name, proc.stderr)
    assert not (tmp_path / "marker.txt").exists()  # no sandbox started
