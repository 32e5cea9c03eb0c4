"""Leftovers of a crashed runner on E2B: the start-of-run sweep kills this host's sandboxes whose runner is
gone, `mimoagent cleanup` (cleanup_all) a run's; a live runner's are named and left alone."""

from __future__ import annotations

import socket
import uuid

from mimo_core.environments.e2b.cleanup import cleanup
from mimo_core.environments.owners import LABEL_HOST, LABEL_PID
from mimo_core.environments.sweep import cleanup_all


def _leftover(run_id: str, pid: int) -> str:
    from e2b import Sandbox

    meta = {
        "mimoagent.run_id": run_id,
        "mimoagent.sandbox": "e2b",
        LABEL_PID: str(pid),
        LABEL_HOST: socket.gethostname(),
    }
    return Sandbox.create(template="mimo-base-bookworm", metadata=meta).sandbox_id


def test_stale_sandboxes_are_killed_and_live_ones_named(e2b) -> None:
    run = f"crash-{uuid.uuid4().hex[:6]}"
    dead, alive = _leftover(run, 2**22 + 7), _leftover(run, 1)  # no such pid; PID 1 always lives
    live: list[str] = []
    assert cleanup(run_id=run, stale_only=True, live=live) == 1
    assert dead not in e2b.sandboxes and alive in e2b.sandboxes and e2b.containers(**{"mimoagent.run_id": run})
    assert len(live) == 1 and alive in live[0]
    summary, _ = cleanup_all(run, [], force=True)
    assert "1 E2B sandbox(es)" in summary, summary
    assert e2b.leftovers(run) == []
