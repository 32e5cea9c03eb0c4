"""SIGTERM stops a run within seconds even while a command sleeps; a second signal stops at once.
Either way no sandbox folder is left and every stopped rollout has its traj.json."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from mimo_core.records.results import ResultsStore
from testkit.scripted_llm import call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import REPO, SECRET, base_url


def _start(workdir: Path, server, n: int = 2) -> tuple[subprocess.Popen, Path, Path]:
    data, cfg, out = write_tasks(workdir, n=n), write_config(workdir, "cfg"), workdir / "out"
    sandboxes = workdir / "sandboxes"
    sandboxes.mkdir()
    doc = yaml.safe_load(cfg.read_text())
    doc["environment"]["backend_kwargs"] = {"root": str(sandboxes)}
    doc["environment"]["timeout"] = 120
    cfg.write_text(yaml.safe_dump(doc))
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": base_url(server, "chat"),
        "MIMO_TEST_API_KEY": SECRET,
        "MIMOAGENT_OBSERVERS": "0",
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mimo_core.cli",
            "-c",
            str(cfg),
            "--dataset",
            str(data),
            "-o",
            str(out),
            "--workers",
            str(n),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, out, sandboxes


def _wait_for_requests(server, n: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(server.requests) < n:
        time.sleep(0.02)
    time.sleep(0.5)  # the commands are running now


def _check_stopped(proc: subprocess.Popen, out: Path, sandboxes: Path, n: int, err: str = "") -> None:
    assert proc.returncode == 130, err[-3000:]
    assert list(sandboxes.iterdir()) == []
    records = ResultsStore(out).load()
    assert len(records) == n and all(r.exit_status == "interrupted" for r in records.values())
    for r in records.values():
        assert (out / r.output_dir / "traj.json").exists()


@contextmanager
def _killed_on_exit(proc: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """The runner dies with the test: a runner that hangs must not outlive the suite."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _stop(proc: subprocess.Popen, signals: list[signal.Signals], timeout: float = 60) -> tuple[float, str]:
    """Send the signals 50 ms apart; the seconds until the runner exited, and its stderr."""
    start = time.monotonic()
    for signum in signals:
        proc.send_signal(signum)
        time.sleep(0.05)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"the runner did not stop within {timeout}s of {signals}: {err[-3000:]}") from None
    return time.monotonic() - start, err


@pytest.mark.parametrize(
    "signals",
    [[signal.SIGTERM], [signal.SIGTERM, signal.SIGTERM], [signal.SIGHUP], [signal.SIGHUP, signal.SIGTERM]],
    ids=["TERM", "TERM-TERM", "HUP", "HUP-TERM"],
)
def test_sigterm_during_a_long_command_stops_within_seconds(workdir: Path, scripted_llm, signals) -> None:
    scripted_llm.set_responder(turns(call("bash", command="sleep 60"), call("submit")))
    proc, out, sandboxes = _start(workdir, scripted_llm)
    with _killed_on_exit(proc):
        _wait_for_requests(scripted_llm, 2)
        took, err = _stop(proc, signals)
    assert took < 5, err
    _check_stopped(proc, out, sandboxes, 2, err)


def test_sigterm_during_a_model_call_does_not_wait_for_the_request_timeout(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(turns(call("submit")))
    scripted_llm.inject(0, times=2, delay=30)  # the server sits on both first requests
    proc, out, sandboxes = _start(workdir, scripted_llm)
    with _killed_on_exit(proc):
        _wait_for_requests(scripted_llm, 2)
        took, err = _stop(proc, [signal.SIGINT])
    assert took < 5, err
    _check_stopped(proc, out, sandboxes, 2, err)


def test_a_second_signal_stops_while_the_first_one_holds_a_sandbox_lock(workdir: Path) -> None:
    """The second signal lands while the main thread is inside a sandbox's `interrupt()` (the first
    signal's unwinding, as in the stack dump of issue 24): the run still exits 130 at once, and the
    sandbox is gone."""
    root = workdir / "sandboxes"
    root.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.core.signal_proc", str(root)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with _killed_on_exit(proc):
        assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
        took, err = _stop(proc, [signal.SIGTERM, signal.SIGTERM], timeout=30)
    assert proc.returncode == 130, err
    assert took < 8, err
    assert list(root.iterdir()) == []


def _big_repo(workdir: Path) -> tuple[Path, Path]:
    """A row whose repository takes seconds to prepare (a 60 MB file that git must compress), and a
    TMPDIR of the test's own, where the runner's scratch (the prepared base repositories) lives."""
    data = write_tasks(workdir, n=1)
    with open(workdir / "repo" / "big.bin", "wb") as f:
        f.write(os.urandom(60 << 20))
    tmp = workdir / "tmp"
    tmp.mkdir()
    return data, tmp


def _wait_for_setup(tmp: Path, proc: subprocess.Popen) -> None:
    """Until a process works in the runner's base-repository scratch (the copy is done, git runs)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if _processes_in(tmp):
            return
        time.sleep(0.01)
    raise AssertionError("the repository set-up never started")


def _processes_in(folder: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.readlink(entry / "cwd").startswith(str(folder)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("signals", [1, 2])
def test_sigterm_during_repository_setup_stops_within_seconds(workdir: Path, scripted_llm, signals: int) -> None:
    data, tmp = _big_repo(workdir)
    cfg, out, sandboxes = write_config(workdir, "cfg"), workdir / "out", workdir / "sandboxes"
    sandboxes.mkdir()
    doc = yaml.safe_load(cfg.read_text())
    doc["environment"]["backend_kwargs"] = {"root": str(sandboxes)}
    cfg.write_text(yaml.safe_dump(doc))
    env = {
        **os.environ,
        "MIMO_TEST_BASE_URL": base_url(scripted_llm, "chat"),
        "MIMO_TEST_API_KEY": SECRET,
        "MIMOAGENT_OBSERVERS": "0",
        "TMPDIR": str(tmp),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "mimo_core.cli", "-c", str(cfg), "--dataset", str(data), "-o", str(out)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with _killed_on_exit(proc):
        _wait_for_setup(tmp, proc)
        took, err = _stop(proc, [signal.SIGTERM] * signals)
    assert proc.returncode == 130 and took < 5, err
    assert scripted_llm.requests == []  # stopped before the agent started
    assert list(sandboxes.iterdir()) == [] and list(tmp.glob("mimo-*")) == []  # no sandbox, no scratch copy
    deadline = time.monotonic() + 10  # a killed git may take a moment to be reaped
    while _processes_in(tmp) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_in(tmp) == []
    if signals == 1:
        [record] = ResultsStore(out).load().values()
        assert record.exit_status == "interrupted" and "repository" in (record.error or ""), record
        assert "sandbox ready" not in (out / record.output_dir / "instance.log").read_text()


def test_a_run_that_ends_before_the_stop_unwinds_it_still_exits_130_without_a_traceback(workdir: Path) -> None:
    """Under load the first signal's cancel can end every rollout before the unwind reaches the main
    thread: the run then returned the infrastructure-error code (3), and the unwind landed in an exit
    hook as a KeyboardInterrupt traceback. A stopped run exits 130 however its rollouts ended."""
    proc = subprocess.run(
        [sys.executable, "-m", "tests.core.late_unwind_proc", str(workdir / "missing.yaml")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "main returned 130" in proc.stdout, proc.stdout + proc.stderr
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr, proc.stderr
    assert "interrupted; finished rollouts are kept" in proc.stderr
