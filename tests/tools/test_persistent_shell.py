"""The bash tool's named shells on the local backend. What every backend's persistent shell must do is
in the backend contract suite (tests/environments/test_contract_shell.py, checks in shell_checks.py)."""

from __future__ import annotations

from tests.tools.conftest import MakeEnv


def test_the_judge_and_the_agent_have_separate_shells(make_env: MakeEnv) -> None:
    from mimo_core.tools.bash import BashTool

    env = make_env()
    agent, judge = BashTool(session="main"), BashTool(session="judge")
    agent.run({"command": "cd /tmp && X=agent"}, env)
    assert judge.run({"command": "pwd; echo x=$X"}, env).output == f"{env.spec.cwd}\nx=\n[exit code: 0]"
    assert agent.run({"command": "pwd; echo x=$X"}, env).output == "/tmp\nx=agent\n[exit code: 0]"
