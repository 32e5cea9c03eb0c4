"""One scripted run (2 configs × 3 tasks) and one `mimoagent view` process over it, shared by the viewer
tests: the run takes seconds and browsing it must not change it, so sharing it is part of what is tested."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from testkit.processes import stop_group
from testkit.scripted_llm import Reply, Request, ScriptedLLM, call
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import REPO, run_cli

ARTIFACTS = REPO / "outputs" / "test-artifacts"


def a_fixes_b_loops(req: Request) -> Reply:
    """Model `a`: a long command (cut by the tool), an edit, submit. Model `b`: looks until its step limit."""
    n = req.n_assistant_turns
    if req.body.get("model") == "a":
        return [
            Reply(tool_calls=[("bash", {"command": "seq 1 5000"})], reasoning="look first"),
            call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"),
            call("submit"),
        ][min(n, 2)]
    return call("bash", command="cat greeting.txt")


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under `folder` with its size and mtime: equal snapshots = nothing written."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")} | {
        ".": (0, folder.stat().st_mtime_ns)
    }


@dataclass
class Viewer:
    out: Path
    base: str  # http://127.0.0.1:<port>
    url: str  # the run page
    snapshot: dict[str, tuple[int, int]]
    stderr_path: Path
    proc: subprocess.Popen = field(repr=False)

    def stderr(self) -> str:
        return self.stderr_path.read_text()

    @staticmethod
    def command() -> list[str]:
        return [sys.executable, "-m", "mimo_core.cli", "view"]


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    work = tmp_path_factory.mktemp("viewer")
    data = write_tasks(work, 3)
    cfg_a = write_config(work, "a", observation_max_chars=300)
    cfg_b = write_config(work, "b", step_limit=2)
    for cfg, name in ((cfg_a, "a"), (cfg_b, "b")):
        cfg.write_text(cfg.read_text().replace("scripted-model", name))
    out = work / "out"
    with ScriptedLLM(a_fixes_b_loops) as llm:
        proc = run_cli(
            ["-c", str(cfg_a), "-c", str(cfg_b), "--paired", "--dataset", str(data), "--workers", "3", "-o", str(out)],
            llm,
        )
    assert proc.returncode == 0, proc.stderr
    with open(out / "results.jsonl", "a") as fh:
        fh.write('{"run_id": "torn-by-a-kill", "instance_id": "gre')  # a kill mid-write leaves this
    before = snapshot(out)
    stderr_path = work / "viewer.stderr"
    with serve(out, stderr_path) as (server, url):
        yield Viewer(
            out=out, base=url.split("/runs/", 1)[0], url=url, snapshot=before, stderr_path=stderr_path, proc=server
        )


@contextmanager
def serve(out: Path | list[Path], stderr_path: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    """`mimoagent view OUT...` in its own process group; yields it and the URL it printed."""
    folders = [str(p) for p in (out if isinstance(out, list) else [out])]
    with open(stderr_path, "w") as err:
        server = subprocess.Popen(
            [*Viewer.command(), *folders],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )
    try:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(server.stdout.readline()), daemon=True)
        reader.start()
        reader.join(60)
        assert line and "http://" in line[0], f"viewer did not start: {stderr_path.read_text()}"
        yield server, line[0].split(" at ", 1)[1].split()[0]
    finally:
        stop_group(server, timeout=10)
