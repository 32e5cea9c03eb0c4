"""The Environment contract, the bash tool's persistent shell and interrupting: state kept like a
terminal, timeouts, restarts, big and binary output (shell_checks.py), one shell process kept open, a
command killed from another thread, and commands after an interrupt. Run against every backend."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from mimo_core.environments import live
from mimo_core.tools.bash import BashConfig, BashTool
from tests.environments import shell_checks
from tests.environments.conftest import Backend


@pytest.mark.parametrize("check", shell_checks.ALL, ids=lambda c: c.__name__)
def test_persistent_shell(backend: Backend, check: Callable[[Any], None]) -> None:
    check(backend.make())


def test_the_shell_is_one_process_kept_open(backend: Backend) -> None:
    """Calls reuse one shell process (its pid stays), and its stream survives a background job."""
    env = backend.make()
    bash = BashTool(default_timeout=10)
    first = bash.run({"command": "echo $$; sleep 100 >/dev/null 2>&1 &"}, env).output.split()[0]
    assert bash.run({"command": "echo $$"}, env).output.split()[0] == first


def test_a_running_command_can_be_killed_from_another_thread(backend: Backend) -> None:
    """What a SIGTERM handler does (environments.live.interrupt_all): a command sleeping returns at once,
    the bash tool's and `execute`'s alike, and the sandbox keeps working."""
    env = backend.make()
    bash = BashTool(BashConfig(timeout=60))
    threading.Timer(0.5, live.interrupt_all).start()
    start = time.monotonic()
    res = bash.run({"command": "sleep 60"}, env)
    assert time.monotonic() - start < 1.5 + backend.late and res.returncode != 0
    threading.Timer(0.5, live.interrupt_all).start()
    start = time.monotonic()
    assert env.execute("sleep 60", timeout=60).returncode != 0
    assert time.monotonic() - start < 1.5 + backend.late
    assert bash.run({"command": "echo back"}, env).output.startswith("back\n")  # a new shell serves the next call


def test_commands_run_after_an_interrupt(backend: Backend) -> None:
    """interrupt() kills every process of the sandbox, its shells too: grading runs after an agent's time
    limit interrupted it, so the next command must still run. The bash tool's next call tells the model
    its shell was killed (its variables are gone) and starts a new one, which serves the call after."""
    env = backend.make()
    bash = BashTool(BashConfig(timeout=10))
    bash.run({"command": "echo warm"}, env)
    env.execute("echo warm")
    env.interrupt()
    again = env.execute("echo ran")
    assert again.returncode == 0 and again.output == "ran\n"
    told = bash.run({"command": "echo lost"}, env)
    assert "[the shell was killed; a new shell was started in" in told.output and told.returncode != 0
    assert bash.run({"command": "echo back"}, env).output == "back\n[exit code: 0]"
