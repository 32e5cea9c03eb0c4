"""The tools against a real LocalEnvironment: real bash processes, real files."""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

import pytest

from mimo_core import plugins
from mimo_core.config import ToolSpec
from mimo_core.environments.local.environment import LocalEnvironment
from mimo_core.errors import ConfigError
from mimo_core.tools.base import Tool, ToolError
from mimo_core.tools.bash import BashConfig, BashTool
from mimo_core.tools.registry import build_tools, read_only_tools
from mimo_core.tools.submit import SubmitTool
from mimo_core.tools.truncate import truncate_middle
from tests.host_needs import need_bwrap
from tests.tools.conftest import MakeEnv


def sh(tools: dict[str, Tool], env: LocalEnvironment, command: str) -> str:
    return tools["bash"].run({"command": command}, env).output


# -- bash ------------------------------------------------------------------------------------------


def test_cd_and_export_persist_across_bash_calls(tools: dict[str, Tool], env: LocalEnvironment) -> None:
    sh(tools, env, "mkdir -p a/b && cd a/b && export GREETING='hello  world' N=1")
    assert sh(tools, env, 'pwd; echo "$GREETING" $N') == f"{env.spec.cwd}/a/b\nhello  world 1\n[exit code: 0]"
    sh(tools, env, "cd .. && unset N")
    assert sh(tools, env, "pwd; echo n=$N") == f"{env.spec.cwd}/a\nn=\n[exit code: 0]"


def test_exit_code_is_preserved_and_state_saved_on_exit(tools: dict[str, Tool], env: LocalEnvironment) -> None:
    result = tools["bash"].run({"command": "mkdir d && cd d && exit 4"}, env)
    assert result.returncode == 4 and result.output.endswith("[exit code: 4]")
    assert sh(tools, env, "false").endswith("(no output)\n[exit code: 1]")
    assert sh(tools, env, "pwd").startswith(f"{env.spec.cwd}/d\n")


def test_syntax_errors_keep_the_models_line_numbers(tools: dict[str, Tool], env: LocalEnvironment) -> None:
    out = sh(tools, env, "echo 'unterminated")
    assert "line 1" in out and out.endswith("[exit code: 2]")
    assert sh(tools, env, "echo ok") == "ok\n[exit code: 0]"


def test_bash_timeout_is_reported_and_session_survives(make_env: MakeEnv) -> None:
    env = make_env()
    bash = BashTool(BashConfig(timeout=0.5))
    bash.run({"command": "mkdir kept && cd kept"}, env)
    start = time.monotonic()
    out = bash.run({"command": "echo partial; sleep 100 & sleep 100"}, env).output
    assert time.monotonic() - start < 5
    assert out.startswith("partial\n") and "timed out after 0.5 seconds" in out and "killed" in out
    assert bash.run({"command": "pwd"}, env).output == f"{env.spec.cwd}/kept\n[exit code: 0]"


def test_bash_timeout_falls_back_to_the_environment_timeout(make_env: MakeEnv) -> None:
    env = make_env(timeout=0.3)
    bash = build_tools([ToolSpec(tool="bash")], default_timeout=None, observation_max_chars=1000)[0]
    assert "timed out after 0.3 seconds" in bash.run({"command": "sleep 30"}, env).output
    configured = build_tools([ToolSpec(tool="bash")], default_timeout=0.2, observation_max_chars=1000)[0]
    assert "timed out after 0.2 seconds" in configured.run({"command": "sleep 30"}, env).output


def test_long_output_keeps_head_and_tail_and_states_elided_count(tools: dict[str, Tool], env: LocalEnvironment) -> None:
    out = sh(tools, env, "seq 1 20000")
    full = "".join(f"{i}\n" for i in range(1, 20001))
    assert out.startswith("1\n2\n3\n") and out.endswith("19999\n20000\n[exit code: 0]")
    elided = len(full) - 2000
    assert f"[... {elided} characters elided ...]" in out
    assert len(out) < 2200


def test_truncate_middle_is_exact() -> None:
    assert truncate_middle("abcdefghij", 4) == "ab\n[... 6 characters elided ...]\nij"
    assert truncate_middle("short", 10) == "short"


def test_bash_session_works_inside_bubblewrap(tools: dict[str, Tool], make_env: MakeEnv) -> None:
    need_bwrap()
    env = make_env(sandbox="bwrap")
    sh(tools, env, "mkdir x && cd x && export V=7")
    assert sh(tools, env, "pwd; echo $V") == f"{env.task_cwd}/x\n7\n[exit code: 0]"  # bound at the task cwd


def test_judge_bash_keeps_its_own_session(tools: dict[str, Tool], env: LocalEnvironment) -> None:
    sh(tools, env, "mkdir agent_dir && cd agent_dir && export WHO=agent")
    names = [t.schema.name for t in read_only_tools(default_timeout=5)]
    assert names == ["read", "bash", "submit"]
    assert [t.schema.name for t in read_only_tools(default_timeout=5, shell=False)] == ["read", "submit"]
    judge_bash = read_only_tools(default_timeout=5)[1]
    assert "The files are read-only" in judge_bash.schema.description
    out = judge_bash.run({"command": "pwd; echo who=$WHO"}, env).output
    assert out == f"{env.spec.cwd}\nwho=\n[exit code: 0]"


# -- read / write / edit ---------------------------------------------------------------------------


def test_read_shows_numbered_line_ranges(tools: dict[str, Tool], env: LocalEnvironment) -> None:
    Path(env.spec.cwd, "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = tools["read"].run({"path": "f.txt", "start_line": 3, "end_line": 4}, env).output
    assert out == "     3\tline 3\n     4\tline 4\n[lines 3-4 of 10]\n"
    whole = tools["read"].run({"path": "/testbed/f.txt"}, env).output
    assert whole.startswith("     1\tline 1\n") and whole.endswith("    10\tline 10\n")
    assert (
        tools["read"]
        .run({"path": "f.txt", "start_line": 9, "end_line": 50}, env)
        .output.startswith("     9\tline 9\n    10\tline 10\n")
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"path": "missing.txt"}, "file not found: missing.txt"),
        ({"path": "."}, "is a directory"),
        ({"path": "f.txt", "start_line": 5}, "past the end"),
        ({"path": "f.txt", "start_line": 2, "end_line": 1}, "start_line <= end_line"),
        ({"path": "f.txt", "start_line": "2"}, "must be of type integer"),
        ({"file": "f.txt"}, "missing required argument(s) ['path']"),
    ],
)
def test_read_mistakes_are_tool_errors(tools: dict[str, Tool], env: LocalEnvironment, args: dict, message: str) -> None:
    Path(env.spec.cwd, "f.txt").write_text("one\ntwo\n")
    with pytest.raises(ToolError, match=re.escape(message)):
        tools["read"].run(args, env)


def test_read_of_a_long_file_hints_at_ranges(tools: dict[str, Tool], env: LocalEnvironment) -> None:
    Path(env.spec.cwd, "big.txt").write_text("".join(f"row {i}\n" for i in range(1000)))
    out = tools["read"].run({"path": "big.txt"}, env).output
    assert "characters elided" in out and "has 1000 lines; use start_line/end_line" in out


def test_write_creates_parent_dirs(tools: dict[str, Tool], env: LocalEnvironment) -> None:
    out = tools["write"].run({"path": "new/pkg/mod.py", "content": "x = 1\ny = 2\n"}, env).output
    assert out == "Wrote 12 characters (2 lines) to new/pkg/mod.py"
    assert Path(env.spec.cwd, "new/pkg/mod.py").read_text() == "x = 1\ny = 2\n"


def test_edit_replaces_exactly_one_match(tools: dict[str, Tool], env: LocalEnvironment) -> None:
    target = Path(env.spec.cwd, "m.py")
    target.write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    out = tools["edit"].run({"path": "m.py", "old_string": "return 2", "new_string": "return 3"}, env).output
    assert target.read_text() == "def f():\n    return 1\n\ndef g():\n    return 3\n"
    assert "replaced 1 occurrence" in out and "     5\t    return 3" in out


def test_edit_with_no_match_tells_the_model(tools: dict[str, Tool], env: LocalEnvironment) -> None:
    Path(env.spec.cwd, "m.py").write_text("a = 1\n")
    with pytest.raises(ToolError, match=r"not found in m.py \(0 matches\)"):
        tools["edit"].run({"path": "m.py", "old_string": "a=1", "new_string": "a = 2"}, env)
    assert Path(env.spec.cwd, "m.py").read_text() == "a = 1\n"


def test_edit_with_two_matches_tells_the_model_and_replace_all_works(
    tools: dict[str, Tool], env: LocalEnvironment
) -> None:
    target = Path(env.spec.cwd, "m.py")
    target.write_text("x = 0\nx = 0\n")
    with pytest.raises(ToolError, match="matches 2 times in m.py.*replace_all"):
        tools["edit"].run({"path": "m.py", "old_string": "x = 0", "new_string": "x = 1"}, env)
    assert target.read_text() == "x = 0\nx = 0\n"
    out = (
        tools["edit"]
        .run({"path": "m.py", "old_string": "x = 0", "new_string": "x = 1", "replace_all": True}, env)
        .output
    )
    assert target.read_text() == "x = 1\nx = 1\n" and "replaced 2 occurrences" in out


def test_edit_keeps_undecodable_bytes_and_file_mode(tools: dict[str, Tool], env: LocalEnvironment) -> None:
    target = Path(env.spec.cwd, "run.sh")
    target.write_bytes(b"#!/bin/sh\n# caf\xe9\necho old\n")
    os.chmod(target, 0o755)
    tools["edit"].run({"path": "run.sh", "old_string": "echo old", "new_string": "echo new"}, env)
    assert target.read_bytes() == b"#!/bin/sh\n# caf\xe9\necho new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o755


def test_edit_refuses_empty_or_identical_strings(tools: dict[str, Tool], env: LocalEnvironment) -> None:
    Path(env.spec.cwd, "m.py").write_text("a\n")
    with pytest.raises(ToolError, match="old_string is empty"):
        tools["edit"].run({"path": "m.py", "old_string": "", "new_string": "b"}, env)
    with pytest.raises(ToolError, match="identical"):
        tools["edit"].run({"path": "m.py", "old_string": "a", "new_string": "a"}, env)


# -- submit and the registry -----------------------------------------------------------------------


def test_submit_ends_the_rollout_with_its_message(env: LocalEnvironment) -> None:
    submit = SubmitTool()
    assert submit.run({}, env).submitted
    assert submit.run({"message": "fixed it"}, env).output == "fixed it"
    assert submit.run({"summary": "alias"}, env).output == "alias"
    with pytest.raises(ToolError, match="unknown argument"):
        submit.run({"verdict": 1}, env)


def test_build_tools_follows_the_seed_config_and_adds_submit() -> None:
    specs = [
        ToolSpec(tool="bash", config={"timeout": 300}),
        ToolSpec(tool="read"),
        ToolSpec(tool="write"),
        ToolSpec(tool="edit"),
    ]
    tools = build_tools(specs, default_timeout=60, observation_max_chars=5000)
    assert [t.schema.name for t in tools] == ["bash", "read", "write", "edit", "submit"]
    assert "300 seconds" in tools[0].schema.description
    with_submit = build_tools([{"tool": "submit"}, {"tool": "bash"}], default_timeout=60)
    assert [t.schema.name for t in with_submit] == ["submit", "bash"]


def test_every_schema_is_precise() -> None:
    for tool in build_tools([ToolSpec(tool=name) for name in plugins.names("tools")]) + read_only_tools():
        params = tool.schema.parameters
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params["required"]) <= set(params["properties"])
        assert tool.schema.description
        for prop in params["properties"].values():
            assert prop["type"] and prop["description"]


def test_unknown_tool_or_config_key_is_a_config_error_listing_choices() -> None:
    with pytest.raises(ConfigError, match=r"agent.tools\[1\].tool: unknown tool 'grep'.*'bash'.*'edit'"):
        build_tools([ToolSpec(tool="read"), ToolSpec(tool="grep")])
    with pytest.raises(ConfigError, match=r"agent.tools\[0\].config: timout: unknown key.*max_output_chars"):
        build_tools([ToolSpec(tool="bash", config={"timout": 5})])
    with pytest.raises(ConfigError, match="listed more than once"):
        build_tools([ToolSpec(tool="read"), ToolSpec(tool="read")])


def test_max_output_chars_config_overrides_the_agent_limit(env: LocalEnvironment) -> None:
    bash = build_tools([ToolSpec(tool="bash", config={"max_output_chars": 100})], observation_max_chars=100000)[0]
    out = bash.run({"command": "seq 1 1000"}, env).output
    assert "characters elided" in out and len(out) < 200
