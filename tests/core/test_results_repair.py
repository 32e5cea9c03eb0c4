"""A torn last line of results.jsonl is moved aside on the next run, so polars reads the file again."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from mimo_core.records.results import ResultsStore
from testkit.scripted_llm import call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import run_cli

SOLVE = turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))


def test_a_torn_last_line_is_moved_aside_and_its_rollout_redone(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    data, cfg, out = write_tasks(workdir, n=3), write_config(workdir, "cfg"), workdir / "out"
    args = ["-c", str(cfg), "--dataset", str(data), "-o", str(out)]
    assert run_cli(args, scripted_llm).returncode == 0
    results = out / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    torn = lines[-1][: len(lines[-1]) // 2]
    results.write_text("".join(lines[:-1]) + torn)  # a write cut off mid-line, as a kill or full disk leaves
    with pytest.raises(Exception):  # noqa: B017 - polars' own error type varies by version
        pl.read_ndjson(results)
    again = run_cli(args, scripted_llm)
    assert again.returncode == 0, again.stderr
    assert "incomplete line(s) moved to results.jsonl.torn-" in again.stderr
    assert "1 rollouts to run" in again.stderr
    frame = pl.read_ndjson(results)
    assert frame.height == 3 and frame["passed"].to_list() == [True, True, True]
    [aside] = out.glob("results.jsonl.torn-*")
    assert torn.strip() in aside.read_text() and aside.read_text().startswith("# 1 line(s)")


def test_a_clean_file_is_left_alone(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    assert store.repair() is None
    (tmp_path / "results.jsonl").write_text("")
    assert store.repair() is None and list(tmp_path.glob("*.torn-*")) == []
