"""docs/library.md's example runs exactly as written: its code block, extracted from the markdown, run
by a fresh interpreter against the scripted LLM endpoint (through the real openai SDK)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from testkit.scripted_llm import ScriptedLLM, call, turns

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "library.md"
KEY = "sk-library-example-7f3a"


def example() -> str:
    """The first python block after the note that this test runs it."""
    text = DOC.read_text()
    after_note = text[text.index("test_library_example.py runs the block below") :]
    return re.search(r"```python\n(.*?)```", after_note, re.S).group(1)


def _run(code: str, tmp_path: Path, server: ScriptedLLM) -> subprocess.CompletedProcess:
    (tmp_path / "example.py").write_text(code)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "OPENAI_BASE_URL": server.openai_base_url,
        "OPENAI_API_KEY": KEY,
    }
    return subprocess.run(
        [sys.executable, "example.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_library_example_is_about_twenty_lines_and_composes_the_four_parts() -> None:
    code = example()
    assert 15 <= len(code.splitlines()) <= 25
    for part in ("make_config", '"agent"', '"environment_class"', "make_task", "run_rollout"):
        assert part in code


def test_the_library_example_runs_one_rollout_that_is_graded(tmp_path: Path) -> None:
    replies = turns(call("write", path="hello.txt", content="hello\n"), call("submit"))
    with ScriptedLLM(replies) as server:
        proc = _run(example(), tmp_path, server)
        bodies = [json.loads(r.raw) for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "submitted 1.0 2"
    assert [line.split()[0] for line in lines[1:]] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert lines[2] == "user Create hello.txt containing the single line: hello"
    assert [b["model"] for b in bodies] == ["gpt-5-mini", "gpt-5-mini"]
    [record] = (tmp_path / "outputs" / "hello" / "results.jsonl").read_text().splitlines()
    assert json.loads(record)["config_name"] == "hello"
    rollout = tmp_path / "outputs" / "hello" / "hello-1" / "hello" / "0"
    assert {"traj.json", "agent_msgs", "reward_extra_info.json", "instance.log"} <= {p.name for p in rollout.iterdir()}
    written = [p.read_bytes() for p in (tmp_path / "outputs").rglob("*") if p.is_file()]
    assert not any(KEY.encode() in data for data in written)


def test_the_library_example_records_a_zero_when_the_model_does_not_solve_it(tmp_path: Path) -> None:
    """The printed reward comes from the row's verifier, not from the script."""
    with ScriptedLLM(turns(call("write", path="hello.txt", content="goodbye\n"), call("submit"))) as server:
        proc = _run(example(), tmp_path, server)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "submitted 0.0 2"
