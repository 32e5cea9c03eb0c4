"""The bash tool's persistent shell on the local backend, without a sandbox and inside bubblewrap."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.host_needs import needs_bwrap
from tests.tools import shell_checks
from tests.tools.conftest import MakeEnv

SANDBOXES = ["none", pytest.param("bwrap", marks=needs_bwrap)]


@pytest.mark.parametrize("sandbox", SANDBOXES)
@pytest.mark.parametrize("check", shell_checks.ALL, ids=lambda c: c.__name__)
def test_persistent_shell(make_env: MakeEnv, sandbox: str, check: Callable[[Any], None]) -> None:
    check(make_env(sandbox=sandbox))


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_command_can_be_killed_from_another_thread(make_env: MakeEnv, sandbox: str) -> None:
    """What a SIGTERM handler does: the rollout's running command returns at once."""
    import threading
    import time

    from mimo_core.environments import live
    from mimo_core.tools.bash import BashConfig, BashTool

    env = make_env(sandbox=sandbox)
    bash = BashTool(BashConfig(timeout=60))
    threading.Timer(0.5, live.interrupt_all).start()
    start = time.monotonic()
    res = bash.run({"command": "sleep 60"}, env)
    assert time.monotonic() - start < 5
    assert res.returncode != 0
    threading.Timer(0.5, live.interrupt_all).start()
    start = time.monotonic()
    assert env.execute("sleep 60", timeout=60).returncode != 0
    assert time.monotonic() - start < 5
    assert bash.run({"command": "echo back"}, env).output.startswith("back\n")  # the sandbox still works


def test_the_judge_and_the_agent_have_separate_shells(make_env: MakeEnv) -> None:
    from mimo_core.tools.bash import BashTool

    env = make_env()
    agent, judge = BashTool(session="main"), BashTool(session="judge")
    agent.run({"command": "cd /tmp && X=agent"}, env)
    assert judge.run({"command": "pwd; echo x=$X"}, env).output == f"{env.spec.cwd}\nx=\n[exit code: 0]"
    assert agent.run({"command": "pwd; echo x=$X"}, env).output == "/tmp\nx=agent\n[exit code: 0]"
