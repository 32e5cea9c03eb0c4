"""A config that can never work is refused when it loads, before any sandbox starts; a config that fails
on some rows only is reported once per row and not retried until the config (or the row) changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mimo_core.cli.main import main
from mimo_core.config_checks import load_config
from mimo_core.datasets.loader import load_tasks
from mimo_core.errors import ConfigError
from mimo_core.records.results import ResultsStore
from mimo_core.run.batch import run_jobs
from mimo_core.run.plan import RunRequest, plan_run
from mimo_core.status import ExitStatus
from testkit.scripted_llm import call, turns
from testkit.tasks import EVAL, write_config, write_tasks
from tests.core.conftest import SECRET, base_url


@pytest.fixture(autouse=True)
def _endpoint_vars(monkeypatch) -> None:
    """The test profile reads its endpoint from these; no model is called by the load-time cases."""
    monkeypatch.setenv("MIMO_TEST_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MIMO_TEST_API_KEY", SECRET)


def _config(tmp_path: Path, patch: dict) -> Path:
    """The test profile with `patch` merged in (one level deep per block)."""
    path = write_config(tmp_path, "cfg")
    doc = yaml.safe_load(path.read_text())
    for block, values in patch.items():
        doc[block] = {**doc.get(block, {}), **values}
    path.write_text(yaml.safe_dump(doc))
    return path


JUDGE = {"judge_agent": {"agent": {"type": "judge", "instance_template": "{% for r in rubrics %}"}}}
LOAD_TIME_ERRORS = {
    "judge_as_main_agent": ({"agent": {"type": "judge"}}, "agent.type: 'judge' cannot be the main agent"),
    "local_backend_kwarg_unknown": (
        {"environment": {"backend_kwargs": {"rooot": "/tmp"}}},
        "environment.backend_kwargs (local): rooot: unknown key",
    ),
    "docker_backend_kwarg_unknown": (
        {"environment": {"environment_class": "docker", "backend_kwargs": {"network": "host"}}},
        "environment.backend_kwargs (docker): network: unknown key",
    ),
    "template_syntax_error": (
        {"agent": {"system_template": "Work in {{ cwd }"}},
        "agent.system_template: template syntax error at line 1",
    ),
    "judge_template_syntax_error": (
        {"environment": JUDGE},
        "environment.judge_agent.agent.instance_template: template syntax error",
    ),
    "unknown_tool": (
        {"agent": {"tools": [{"tool": "bash"}, {"tool": "browser"}]}},
        "agent.tools[1].tool: unknown tool 'browser'",
    ),
    "negative_command_timeout": ({"environment": {"timeout": -1}}, "environment.timeout: Input should be greater"),
    "negative_startup_timeout": ({"environment": {"startup_timeout": -5}}, "environment.startup_timeout"),
    "negative_request_timeout": ({"model": {"retry": {"timeout": -1}}}, "model.retry.timeout"),
    "negative_bash_timeout": (
        {"agent": {"tools": [{"tool": "bash", "config": {"timeout": -2}}]}},
        "agent.tools[0].config: timeout: Input should be greater than 0",
    ),
    "negative_time_limit": ({"agent": {"time_limit": -1}}, "agent.time_limit"),
}


@pytest.mark.parametrize("case", sorted(LOAD_TIME_ERRORS))
def test_config_that_can_never_work_fails_at_load_naming_file_and_key(tmp_path: Path, case: str) -> None:
    patch, message = LOAD_TIME_ERRORS[case]
    path = _config(tmp_path, patch)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


def _cli_fails(tmp_path: Path, capsys, config: Path, data: Path) -> str:
    sandboxes = tmp_path / "sandboxes"
    doc = yaml.safe_load(config.read_text())
    doc["environment"].setdefault("backend_kwargs", {}).setdefault("root", str(sandboxes))
    config.write_text(yaml.safe_dump(doc))
    assert main(["-c", str(config), "--dataset", str(data), "-o", str(tmp_path / "out")]) == 2
    assert not sandboxes.exists() and not (tmp_path / "out" / "results.jsonl").exists()  # nothing started
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize(
    "case", ["judge_as_main_agent", "template_syntax_error", "unknown_tool", "negative_command_timeout"]
)
def test_cli_exits_2_with_one_line_before_any_sandbox(tmp_path: Path, capsys, case: str) -> None:
    patch, message = LOAD_TIME_ERRORS[case]
    line = _cli_fails(tmp_path, capsys, _config(tmp_path, patch), write_tasks(tmp_path))
    assert message in line and "cfg.yaml" in line


def test_template_variable_no_row_provides_fails_before_any_sandbox(tmp_path: Path, capsys) -> None:
    config = _config(tmp_path, {"agent": {"instance_template": "Fix {{ no_such_field }}"}})
    line = _cli_fails(tmp_path, capsys, config, write_tasks(tmp_path, n=2))
    assert "cfg.yaml: agent.instance_template: no dataset row provides ['no_such_field']" in line


def test_a_template_no_row_fits_is_refused_before_the_output_folder_is_made(tmp_path: Path, capsys) -> None:
    config = _config(tmp_path, {"agent": {"instance_template": "Fix {{ no_such_field }}"}})
    assert "no dataset row provides" in _cli_fails(tmp_path, capsys, config, write_tasks(tmp_path, n=2))
    assert not (tmp_path / "out").exists()


def test_judge_template_variable_no_row_provides_fails_before_any_sandbox(tmp_path: Path, capsys) -> None:
    judge = {"judge_agent": {"agent": {"type": "judge", "instance_template": "{{ rubrics }} {{ grading_notes }}"}}}
    line = _cli_fails(tmp_path, capsys, _config(tmp_path, {"environment": judge}), write_tasks(tmp_path))
    assert "environment.judge_agent.agent.instance_template: no dataset row provides ['grading_notes']" in line


COUNTING_TOOL = """
from pydantic import BaseModel, ConfigDict

from mimo_core.tools.submit import SubmitTool

BUILT = []


class CountingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str = ""


class CountingTool(SubmitTool):
    config_model = CountingConfig

    @classmethod
    def from_config(cls, config, default_timeout, observation_max_chars):
        BUILT.append(config.label)
        return cls()
"""


def test_a_config_check_checks_tools_without_building_them(tmp_path: Path, monkeypatch) -> None:
    """The check validates the tools block (names, `config:` keys); the agent builds the tools, once per rollout."""
    import importlib

    from mimo_core.tools.registry import build_tools

    (tmp_path / "counting_tool.py").write_text(COUNTING_TOOL)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("counting_tool")
    tools = [{"tool": "bash"}, {"tool": "counting_tool:CountingTool", "config": {"label": "x"}}]
    named = load_config(_config(tmp_path, {"agent": {"tools": tools}}))
    assert module.BUILT == []
    build_tools(named.config.agent.tools)
    assert module.BUILT == ["x"]
    bad = [{"tool": "counting_tool:CountingTool", "config": {"lable": "x"}}]
    with pytest.raises(ConfigError, match=r"agent.tools\[0\].config: lable: unknown key"):
        load_config(_config(tmp_path, {"agent": {"tools": bad}}))
    assert module.BUILT == ["x"]


def _rows_with_and_without_hint(folder: Path) -> Path:
    (folder / "repo").mkdir(parents=True, exist_ok=True)
    (folder / "repo" / "greeting.txt").write_text("hello\n")
    rows = [
        {
            "instance_id": "with-hint",
            "hint": "use the edit tool",
            "dataset_type": "generic",
            "repo_dir": "repo",
            "eval_script": EVAL,
            "problem_statement": "Make greeting.txt say goodbye.",
        },
        {
            "instance_id": "no-hint",
            "dataset_type": "generic",
            "repo_dir": "repo",
            "eval_script": EVAL,
            "problem_statement": "Make greeting.txt say goodbye.",
        },
    ]
    path = folder / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _plan(tasks: list, config_path: Path, out: Path, run_id: str) -> list:
    request = RunRequest(dataset="", configs=[str(config_path)], output_dir=out, run_id=run_id)
    return plan_run(request, tasks, [load_config(config_path)]).jobs


def test_row_specific_config_error_is_reported_once_and_rerun_only_after_the_config_changes(
    tmp_path: Path, scripted_llm, monkeypatch
) -> None:
    monkeypatch.setenv("MIMO_TEST_BASE_URL", base_url(scripted_llm, "chat"))
    monkeypatch.setenv("MIMO_TEST_API_KEY", SECRET)
    scripted_llm.set_responder(
        turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))
    )
    tasks = load_tasks(str(_rows_with_and_without_hint(tmp_path)))
    out = tmp_path / "out"
    config_path = write_config(tmp_path, "cfg", instance_template="{{ task }} Hint: {{ hint }}")
    records = {r.instance_id: r for r in run_jobs(_plan(tasks, config_path, out, "r1"))}
    bad = records["no-hint"]
    assert (bad.exit_status, bad.infra_error, bad.reward) == (ExitStatus.CONFIG_ERROR, False, None)
    assert "hint" in (bad.error or "") and records["with-hint"].exit_status == ExitStatus.SUBMITTED
    assert _plan(tasks, config_path, out, "r2") == []  # same input: not retried
    write_config(tmp_path, "cfg", instance_template="{{ task }} Hint: {{ hint | default('none') }}")
    [again] = _plan(tasks, config_path, out, "r3")
    assert again.task.instance_id == "no-hint"
    [fixed] = run_jobs([again])
    assert fixed.exit_status == ExitStatus.SUBMITTED and ResultsStore(out).load()[again.key].run_id == "r3"
