"""Local sandboxes against a hostile agent, through the real CLI: what commands can see, and what is left
after a rollout ends normally or its runner is killed with SIGKILL."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from testkit.scripted_llm import Reply, Request, call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import REPO, SECRET, base_url, run_cli
from tests.host_needs import needs_bwrap

SANDBOXES = ["none", pytest.param("bwrap", marks=needs_bwrap)]


def _config(workdir: Path, sandbox: str, root: Path) -> Path:
    cfg = write_config(workdir, f"cfg-{sandbox}")
    doc = yaml.safe_load(cfg.read_text())
    doc["environment"].update(sandbox=sandbox, backend_kwargs={"root": str(root)})
    cfg.write_text(yaml.safe_dump(doc))
    return cfg


def _cli(data: Path, cfg: Path, out: Path, *extra: str) -> list[str]:
    return ["-c", str(cfg), "--dataset", str(data), "-o", str(out), *extra]


def _sleepers(tag: str) -> list[int]:
    """Pids of host processes running `sleep <n>` with n starting with `tag` (unique to one test)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:1] == [b"sleep"] and len(argv) > 1 and argv[1].startswith(tag.encode()):
                found.append(int(entry.name))
    return found


KEY_PATTERN = f"{SECRET[:-1]}[{SECRET[-1]}]"  # matches the key, not this grep's own command line


def _tool_output(req: Request) -> str:
    return str(req.body["messages"][-1].get("content"))


def _background_jobs(tag: str) -> str:
    return (
        f"sleep {tag}1 & setsid sleep {tag}2 & nohup sleep {tag}3 >/dev/null 2>&1 & "
        f"(setsid sleep {tag}4 &) ; sleep 0.3; echo started"
    )


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_background_processes_are_gone_when_a_rollout_ends(workdir: Path, scripted_llm, sandbox: str) -> None:
    tag = f"99{secrets.randbelow(9000) + 1000}"
    scripted_llm.set_responder(turns(call("bash", command=_background_jobs(tag)), call("submit")))
    data, root = write_tasks(workdir, n=1), workdir / "sandboxes"
    out = workdir / "out"
    proc = run_cli(_cli(data, _config(workdir, sandbox, root), out), scripted_llm)
    assert proc.returncode == 0, proc.stderr
    assert "started" in _tool_output(scripted_llm.requests[-1])
    assert _sleepers(tag) == []
    assert list(root.iterdir()) == []


@pytest.mark.parametrize("sandbox", SANDBOXES)
@pytest.mark.parametrize("then", ["rerun", "cleanup"])
def test_after_sigkill_of_the_runner_nothing_of_the_killed_run_is_left(
    workdir: Path,
    scripted_llm,
    sandbox: str,
    then: str,
) -> None:
    tag = f"98{secrets.randbelow(9000) + 1000}"
    scripted_llm.set_responder(
        turns(call("bash", command=_background_jobs(tag)), call("bash", command="sleep 30"), call("submit"))
    )
    data, root, out = write_tasks(workdir, n=1), workdir / "sandboxes", workdir / "out"
    cfg = _config(workdir, sandbox, root)
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": base_url(scripted_llm, "chat"),
        "MIMO_TEST_API_KEY": SECRET,
        "MIMOAGENT_OBSERVERS": "0",
    }
    runner = subprocess.Popen(
        [sys.executable, "-m", "mimo_core.cli", *_cli(data, cfg, out)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(scripted_llm.requests) < 2:
            time.sleep(0.02)
        assert len(scripted_llm.requests) >= 2, "the rollout never reached its second step"
        time.sleep(0.3)  # inside `sleep 30` now
        assert len(_sleepers(tag)) == 4  # the probe sees them: it can fail
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait()
    assert len(list(root.iterdir())) == 1  # the killed run's sandbox folder
    if then == "rerun":
        scripted_llm.set_responder(turns(call("submit")))
        proc = run_cli(_cli(data, cfg, out, "--redo-existing"), scripted_llm)
        assert proc.returncode == 0, proc.stderr
    else:
        proc = subprocess.run(
            [sys.executable, "-m", "mimo_core.cli", "cleanup", "--stale-only", "--root", str(root)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0 and "removed 1 local sandbox(es)" in proc.stdout, proc.stdout + proc.stderr
    assert list(root.iterdir()) == []
    deadline = time.monotonic() + 5  # SIGKILLed processes vanish once their parent reaps them
    while _sleepers(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sleepers(tag) == []


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_what_a_command_can_see_of_the_runner(workdir: Path, scripted_llm, sandbox: str) -> None:
    """bwrap: no process of the host is visible, so neither the key in the runner's environment nor its
    command line, and it cannot be signalled. Without a sandbox everything is (the probe can fail)."""
    runner: dict[str, Any] = {}

    def responder(req: Request) -> Reply:
        if req.n_assistant_turns == 0:
            pid = runner["proc"].pid
            return call(
                "bash",
                command=(
                    f"grep -ls {SECRET} /proc/[0-9]*/environ | wc -l; "
                    "grep -ls 'mimo_core[.]cli' /proc/[0-9]*/cmdline | wc -l;"
                    f" kill -0 {pid} 2>/dev/null && echo signalable || echo unreachable; ls /proc | grep -c '^[0-9]';"
                    f" grep -ls '{KEY_PATTERN}' /proc/[0-9]*/cmdline | wc -l"
                ),
            )
        return call("submit")

    scripted_llm.set_responder(responder)
    data, root, out = write_tasks(workdir, n=1), workdir / "sandboxes", workdir / "out"
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": base_url(scripted_llm, "chat"),
        "MIMO_TEST_API_KEY": SECRET,
        "MIMOAGENT_OBSERVERS": "0",
    }
    runner["proc"] = subprocess.Popen(
        [sys.executable, "-m", "mimo_core.cli", *_cli(data, _config(workdir, sandbox, root), out)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, err = runner["proc"].communicate(timeout=120)
    assert runner["proc"].returncode == 0, err
    seen = _tool_output(scripted_llm.requests[-1]).split()
    assert seen[4] == "0", seen  # the key is in the runner's environment at most, on no command line
    if sandbox == "bwrap":
        assert seen[:3] == ["0", "0", "unreachable"], seen
        assert int(seen[3]) <= 6  # its own: control, two shells, this pipeline
        assert "sandbox is 'none'" not in err
    else:
        assert int(seen[0]) >= 1 and int(seen[1]) >= 1 and seen[2] == "signalable", seen
        assert err.count("environment.sandbox is 'none'") == 1
