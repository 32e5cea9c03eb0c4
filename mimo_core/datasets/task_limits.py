"""The task's own limits applied to a rollout: its agent timeout, enforced even mid-command."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from mimo_core.config import MimoConfig
from mimo_core.datasets.base import Task
from mimo_core.environments.base import Environment


def with_task_limits(config: MimoConfig, task: Task) -> MimoConfig:
    """The task's own agent timeout (Harbor `[agent].timeout_sec`) is the agent's wall-clock limit unless
    the config sets a stricter one."""
    task_limit = getattr(task, "agent_timeout_sec", None) or 0.0
    configured = config.agent.time_limit
    if task_limit <= 0 or (configured and configured <= task_limit):
        return config
    return config.model_copy(update={"agent": config.agent.model_copy(update={"time_limit": task_limit})})


REPEAT_S = 0.5  # past the limit, running commands are killed again this often until the agent stops


@contextlib.contextmanager
def agent_deadline(env: Environment, seconds: float, stop: threading.Event | None = None) -> Iterator[None]:
    """At the time limit, kill the command the agent is running (the loop checks its limits between
    steps, so a long command would otherwise overrun it by up to the tool's own timeout). The agent's
    own clock starts a moment after this one, so it may start one more command after the kill: that
    one is killed by the next round, until the agent has stopped."""
    interrupt = getattr(env, "interrupt", None)
    if not seconds or seconds <= 0 or interrupt is None:
        yield
        return
    done = threading.Event()

    def enforce() -> None:
        remaining = getattr(stop, "remaining", None)  # an AgentStop: its clock stands still during budget waits
        if remaining is None:
            if done.wait(seconds):
                return
        else:
            while (left := remaining()) is not None and left > 0:
                if done.wait(min(left, 1.0)):
                    return
        while not done.is_set():
            interrupt()
            done.wait(REPEAT_S)

    thread = threading.Thread(target=enforce, name="mimo-agent-deadline", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
