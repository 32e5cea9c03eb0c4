"""Every bad input is one line on stderr, exit 2, and nothing started (no rollout folder, no request)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testkit.tasks import write_config, write_tasks
from tests.core.conftest import run_cli


def _check_refused(proc, out: Path, server, message: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert server.requests == []
    assert not (out / "results.jsonl").exists()


def test_a_slice_with_step_zero(workdir: Path, scripted_llm) -> None:
    data, cfg, out = write_tasks(workdir), write_config(workdir, "cfg"), workdir / "out"
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--slice", "::0"], scripted_llm)
    _check_refused(proc, out, scripted_llm, "--slice: '::0': the step cannot be 0")


def test_a_jsonl_file_with_invalid_utf8(workdir: Path, scripted_llm) -> None:
    data, cfg, out = write_tasks(workdir), write_config(workdir, "cfg"), workdir / "out"
    data.write_bytes(data.read_bytes() + b'{"instance_id": "caf\xe9", "dataset_type": "generic"}\n')
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm)
    _check_refused(proc, out, scripted_llm, "row 2: not valid UTF-8 (byte 0xe9 at column 21)")
    assert not out.exists()


@pytest.mark.parametrize("where", ["file", "under_file", "unwritable"])
def test_an_output_folder_that_cannot_be_one(workdir: Path, scripted_llm, where: str) -> None:
    data, cfg = write_tasks(workdir), write_config(workdir, "cfg")
    blocker = workdir / "plain.txt"
    blocker.write_text("not a folder\n")
    out = {"file": blocker, "under_file": blocker / "sub" / "out", "unwritable": Path("/proc/mimo-out")}[where]
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm)
    expected = {
        "file": "is a file, not a folder",
        "under_file": "is a file, so no folder can be made",
        "unwritable": "cannot write there",
    }[where]
    _check_refused(proc, workdir / "nowhere", scripted_llm, f"-o {out}: ")
    assert expected in proc.stderr
    assert blocker.read_text() == "not a folder\n"


def test_an_empty_config_file(workdir: Path, scripted_llm) -> None:
    data, out = write_tasks(workdir), workdir / "out"
    cfg = workdir / "empty.yaml"
    cfg.write_text("# nothing here yet\n")
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm)
    _check_refused(proc, out, scripted_llm, "empty.yaml: the config file is empty")


def test_a_negative_timeout(workdir: Path, scripted_llm) -> None:
    data, out = write_tasks(workdir), workdir / "out"
    cfg = write_config(workdir, "cfg")
    cfg.write_text(cfg.read_text().replace("timeout: 30", "timeout: -5"))
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm)
    _check_refused(proc, out, scripted_llm, "cfg.yaml: environment.timeout: Input should be greater than 0")


def test_a_repo_archive_that_is_not_base64(workdir: Path, scripted_llm) -> None:
    cfg, out = write_config(workdir, "cfg"), workdir / "out"
    data = workdir / "bad.jsonl"
    data.write_text(
        json.dumps(
            {
                "instance_id": "a",
                "dataset_type": "generic",
                "repo_archive": "%%% not base64",
                "problem_statement": "x",
                "eval_script": "true",
            }
        )
        + "\n"
    )
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm)
    _check_refused(proc, out, scripted_llm, "row 1: field repo_archive")
    assert "not valid base64" in proc.stderr and not out.exists()


def test_an_empty_dataset_is_refused_unless_allowed(workdir: Path, scripted_llm) -> None:
    cfg, out = write_config(workdir, "cfg"), workdir / "out"
    data = workdir / "empty.jsonl"
    data.write_text("")
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm)
    _check_refused(proc, out, scripted_llm, "0 rows")
    allowed = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--allow-empty"], scripted_llm)
    assert allowed.returncode == 0, allowed.stderr


def test_a_filter_that_selects_nothing_says_so(workdir: Path, scripted_llm) -> None:
    data, cfg, out = write_tasks(workdir), write_config(workdir, "cfg"), workdir / "out"
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--filter", "^nomatch$"], scripted_llm)
    _check_refused(proc, out, scripted_llm, "0 rows after --filter/--slice")


def test_a_key_given_on_the_command_line_is_refused(workdir: Path, scripted_llm) -> None:
    data, cfg, out = write_tasks(workdir), write_config(workdir, "cfg"), workdir / "out"
    literal = '{"model": {"model_kwargs": {"api_key": "sk-live-123456"}}}'
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--override-config", literal], scripted_llm)
    _check_refused(proc, out, scripted_llm, "--override-config: model.model_kwargs.api_key: a secret on the command")
    assert "sk-live-123456" not in proc.stderr
    reference = '{"model": {"model_kwargs": {"api_key": "${MIMO_TEST_API_KEY}", "max_output_tokens": 64}}}'
    ok = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out), "--override-config", reference], scripted_llm)
    assert ok.returncode == 0, ok.stderr
