"""`mimoagent export` from a shell: the summary, the rollouts left out on stderr, and bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mimo_core.cli.parser import Parser as _Parser
from mimo_core.errors import ConfigError
from mimo_core.exports.cli import main as export_main
from tests.core.conftest import REPO
from tests.exports.conftest import ScriptedRun


def _mimoagent(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mimo_core.cli", *args],
        cwd=REPO,
        text=True,
        capture_output=True,
        timeout=60,
        env={**os.environ, "MIMOAGENT_OBSERVERS": "0"},
    )


def test_export_command_writes_and_names_rollouts_without_token_ids(scripted_run: ScriptedRun, tmp_path: Path) -> None:
    proc = _mimoagent(
        "export",
        str(scripted_run.out),
        "--format",
        "rl",
        "-o",
        str(tmp_path),
        "--status",
        "submitted",
        "--min-reward",
        "1",
    )
    assert proc.returncode == 0, proc.stderr
    assert "rl: 2 rollouts, 4 rows" in proc.stdout and "2 rollouts left out" in proc.stdout
    left_out = [line for line in proc.stderr.splitlines() if "left out" in line]
    assert len(left_out) == 2 and all("/plain/0" in line for line in left_out)
    assert (tmp_path / "rl.parquet").exists() and (tmp_path / "rl_report.json").exists()


def test_export_of_an_empty_folder_exits_2_with_one_line(tmp_path: Path) -> None:
    proc = _mimoagent("export", str(tmp_path), "--format", "sft")
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert str(tmp_path) in line and "not an output folder" in line
    assert not (tmp_path / "exports").exists()


def test_export_bad_input_is_refused(scripted_run: ScriptedRun, tmp_path: Path, capsys) -> None:
    (tmp_path / "results.jsonl").write_text("")
    with pytest.raises(ConfigError, match="no finished rollouts"):
        export_main([str(tmp_path), "--format", "sft"], _Parser)
    with pytest.raises(ConfigError, match="not a folder"):
        export_main([str(tmp_path / "missing"), "--format", "atif"], _Parser)
    for bad in (["--format", "csv"], ["--format", "sft", "--status", "sumbitted"]):
        with pytest.raises(SystemExit) as exc:
            export_main([str(scripted_run.out), *bad], _Parser)
        assert exc.value.code == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
