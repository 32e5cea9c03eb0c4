"""A CLI agent whose endpoint trickles its reply for ever: `agent.time_limit` ends the rollout as
`time_limit` within the limit, and the call in flight is in agent_msgs with what had arrived."""

from __future__ import annotations

import time
from pathlib import Path

from mimo_core.records.model_calls import iter_steps
from mimo_core.status import ExitStatus
from testkit.slow_server import SlowServer
from tests.cli_agents.conftest import run_cli_rollout

LIMIT = 15.0


def test_a_trickling_endpoint_cannot_hold_a_cli_rollout_past_its_time_limit(tmp_path: Path) -> None:
    with SlowServer("trickle", interval=1.0) as server:
        start = time.monotonic()
        record, rollout, _ = run_cli_rollout(
            tmp_path, server, "mini-swe-agent", "chat", exit_code=None, time_limit=LIMIT
        )
        took = time.monotonic() - start
        assert server.wait_closed(10), "the proxy kept the upstream connection after the rollout"
    log = (rollout / "instance.log").read_text()
    assert record.exit_status is ExitStatus.TIME_LIMIT, log[-3000:]
    assert took < LIMIT + 45, took  # + the CLI's start-up, the sandbox, the grading, the mimoagent process
    [call] = list(iter_steps(rollout / "agent_msgs"))
    assert call.response.get("_incomplete") == "stopped" and call.request["messages"]
