"""How a CLI agent's failures end a rollout: each a typed exit status with a one-line reason, recorded
without harming the output folder. Real claude-code (a native binary: quick to start) on the scripted server."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mimo_core.records.results import ResultsStore
from testkit.scripted_llm import Reply, call, turns
from testkit.tasks import write_tasks
from tests.cli_agents.conftest import needs_npm, run_cli_rollout, write_cli_config
from tests.core.conftest import run_cli

READ_FOREVER = turns(call("Bash", command="cat greeting.txt"))


def _processes_under(root: Path) -> list[int]:
    """Pids whose working directory is inside `root` (a rollout's sandbox)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(str(root)):
                found.append(int(pid))
        except OSError:
            continue
    return found


def test_a_cli_that_exits_non_zero_is_an_agent_error_with_its_reason(tmp_path: Path, scripted_llm) -> None:
    record, _, traj = run_cli_rollout(tmp_path, scripted_llm, "claude-code", "anthropic", cli_args=["--no-such-flag"])
    assert record.exit_status == "agent_error"
    assert "exited with code" in (record.error or "") and "no-such-flag" in (record.error or "")
    assert "\n" not in (record.error or "")
    assert traj.exit_status == "agent_error" and scripted_llm.requests == []


def test_a_cli_that_never_ends_is_killed_at_the_time_limit_with_its_whole_tree(tmp_path: Path, scripted_llm) -> None:
    scripted_llm.set_responder(READ_FOREVER)
    scripted_llm.inject(0, times=1000, delay=3600)  # every model call hangs
    sandboxes = tmp_path / "sandboxes"
    start = time.monotonic()
    record, rollout, _ = run_cli_rollout(
        tmp_path,
        scripted_llm,
        "claude-code",
        "anthropic",
        time_limit=4,
        environment={"backend_kwargs": {"root": str(sandboxes)}},
    )
    assert record.exit_status == "time_limit" and "agent.time_limit" in (record.error or "")
    assert time.monotonic() - start < 120
    assert _processes_under(sandboxes) == []
    assert (rollout / "agent_logs" / "stdout.log").exists()


def test_the_step_limit_is_the_clis_own_turn_limit(tmp_path: Path, scripted_llm) -> None:
    scripted_llm.set_responder(READ_FOREVER)  # a model that never finishes
    record, rollout, _ = run_cli_rollout(
        tmp_path, scripted_llm, "claude-code", "anthropic", step_limit=2, exit_code=None
    )
    assert record.exit_status == "step_limit", (rollout / "instance.log").read_text()
    assert "agent.step_limit" in (record.error or "") and len(scripted_llm.requests) == 2
    assert "--max-turns 2" in (rollout / "instance.log").read_text()


def test_an_endpoint_refusing_the_key_is_a_model_auth_error(tmp_path: Path, scripted_llm) -> None:
    scripted_llm.inject(401, times=1000)
    record, _, _ = run_cli_rollout(tmp_path, scripted_llm, "claude-code", "anthropic", exit_code=None)
    assert record.exit_status == "model_auth_error", record.error
    assert "HTTP 401" in (record.error or "")


def test_an_unknown_version_is_a_config_error_naming_package_and_version(tmp_path: Path, scripted_llm) -> None:
    record, _, _ = run_cli_rollout(
        tmp_path, scripted_llm, "claude-code", "anthropic", version="0.0.0-nope", exit_code=None
    )
    assert record.exit_status == "config_error"
    assert "@anthropic-ai/claude-code@0.0.0-nope does not exist" in (record.error or "")
    assert record.reward is None and scripted_llm.requests == []


def test_a_broken_payload_is_a_config_error_naming_the_file(tmp_path: Path, scripted_llm) -> None:
    broken = tmp_path / "claude-code.tar.gz"
    broken.write_bytes(b"not an archive")
    record, _, _ = run_cli_rollout(
        tmp_path, scripted_llm, "claude-code", "anthropic", payload_path=str(broken), exit_code=None
    )
    assert record.exit_status == "config_error"
    assert f"agent.payload_path {broken}: broken payload" in (record.error or "")


def test_an_unknown_cli_stops_the_run_before_any_rollout(tmp_path: Path, scripted_llm) -> None:
    needs_npm()
    data = write_tasks(tmp_path)
    cfg = write_cli_config(tmp_path, "bad", "claude-kode", "anthropic")
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(tmp_path / "out")], scripted_llm)
    assert proc.returncode == 2
    assert "bad.yaml: agent.type: " in proc.stderr and "'claude-kode'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert ResultsStore(tmp_path / "out").load() == {}


def test_a_sandbox_keeps_working_after_a_failed_cli(tmp_path: Path, scripted_llm) -> None:
    """Another rollout right after a crash in the same run still passes: the cache is not poisoned."""
    scripted_llm.set_responder(
        turns(call("Bash", command="sed -i s/hello/goodbye/ greeting.txt"), Reply(content="done"))
    )
    record, _, _ = run_cli_rollout(tmp_path, scripted_llm, "claude-code", "anthropic")
    assert (record.exit_status, record.passed) == ("submitted", True)


def test_concurrent_rollouts_install_once_and_all_pass(
    tmp_path: Path, scripted_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two rollouts start together on an empty cache: one installs, the other waits for it."""
    needs_npm()
    monkeypatch.setenv("MIMOAGENT_CACHE_DIR", str(tmp_path / "fresh-cache"))
    scripted_llm.set_responder(
        turns(call("Bash", command="sed -i s/hello/goodbye/ greeting.txt"), Reply(content="done"))
    )
    data = write_tasks(tmp_path, n=2)
    cfg = write_cli_config(tmp_path, "claude", "claude-code", "anthropic")
    out = tmp_path / "out"
    proc = run_cli(
        ["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--workers", "2"],
        scripted_llm,
        "anthropic",
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr
    records = ResultsStore(out).load().values()
    assert [(r.exit_status, r.passed) for r in records] == [("submitted", True)] * 2
    logs = [(out / r.output_dir / "instance.log").read_text() for r in records]
    assert sum("installing @anthropic-ai/claude-code@2.1.332" in log for log in logs) == 1


def test_the_cost_limit_stops_a_cli_at_the_proxy(tmp_path: Path, scripted_llm) -> None:
    """Each scripted call costs $0.00002 at the test pricing: past $0.00003 the proxy refuses the next."""
    scripted_llm.set_responder(READ_FOREVER)
    record, _, traj = run_cli_rollout(tmp_path, scripted_llm, "claude-code", "anthropic", cost_limit=0.00003)
    assert record.exit_status == "cost_limit" and "agent.cost_limit" in (record.error or "")
    assert len(scripted_llm.requests) == 2 == len(traj.calls)
