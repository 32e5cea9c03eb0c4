"""Two ids never share a rollout folder; ids that cannot name anything are refused at load; folders
written under the old naming are still found."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mimo_core.records.results import ResultsStore
from mimo_core.records.trajectory import read_trajectory
from mimo_core.run.folder_names import folder_name, legacy_folder_name
from testkit.scripted_llm import call, turns
from testkit.tasks import EVAL, write_config
from tests.core.conftest import run_cli

SOLVE = turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))
TRICKY = [
    "a/b",
    "a_b",
    "a\\b",
    "../../x",
    "x",
    "_x_",
    ".x.",
    "y" * 300,
    "y" * 299 + "z",
    "results.jsonl",
    "a_b-0123456789ab",
    "é",
    "ü",
]


def _rows(folder: Path, ids: list[str]) -> Path:
    (folder / "repo").mkdir(parents=True, exist_ok=True)
    (folder / "repo" / "greeting.txt").write_text("hello\n")
    path = folder / "tasks.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "instance_id": i,
                    "dataset_type": "generic",
                    "repo_dir": "repo",
                    "eval_script": EVAL,
                    "problem_statement": f"task {i}",
                }
            )
            + "\n"
            for i in ids
        )
    )
    return path


def test_folder_names_are_distinct_short_and_plain_when_they_can_be() -> None:
    names = [folder_name(i) for i in TRICKY]
    assert len(set(names)) == len(TRICKY)
    assert all(0 < len(n.encode()) <= 100 and "/" not in n and not n.startswith(".") for n in names)
    assert folder_name("django__django-11099") == "django__django-11099"  # ordinary ids stay readable
    assert folder_name(folder_name("a/b")) != folder_name("a/b")  # a hashed-looking id is hashed again


def test_ids_that_sanitise_alike_run_in_their_own_folders(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    data, cfg, out = _rows(workdir, TRICKY), write_config(workdir, "cfg"), workdir / "out"
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    records = ResultsStore(out).load()
    assert sorted(k[0] for k in records) == sorted(TRICKY)
    assert len({r.output_dir for r in records.values()}) == len(TRICKY)
    for r in records.values():
        folder = (out / r.output_dir).resolve()
        assert folder.is_relative_to(out.resolve())
        assert read_trajectory(folder / "traj.json").instance_id == r.instance_id
        assert r.exit_status == "submitted" and r.passed and r.attempts == 1, r
        assert not (folder / "attempts").exists()
    assert len((out / "results.jsonl").read_text().splitlines()) == len(TRICKY)


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("", "empty or blank"),
        ("   ", "empty or blank"),
        ("a\nb", "control character"),
        ("a\x00b", "control character"),
        ("a\x1bb", "control character"),
        ("a\u2028b", "control character"),
    ],
)
def test_an_id_that_cannot_name_anything_is_refused_at_load(workdir: Path, scripted_llm, bad: str, why: str) -> None:
    data, cfg, out = _rows(workdir, ["fine", bad]), write_config(workdir, "cfg"), workdir / "out"
    proc = run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(out)], scripted_llm)
    assert proc.returncode == 2, proc.stderr
    assert "row 2: field instance_id" in proc.stderr and why in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert scripted_llm.requests == [] and not (out / "results.jsonl").exists()


def _as_written_before(out: Path, instance_id: str) -> Path:
    """Move a rollout's folder to the name the old rule gave it and point its record there, as an output
    folder written before this change looks."""
    [rec] = [r for r in ResultsStore(out).load().values() if r.instance_id == instance_id]
    old = Path(legacy_folder_name(instance_id)) / "cfg" / "0"
    (out / old).parent.mkdir(parents=True)
    os.rename(out / rec.output_dir, out / old)
    os.rmdir((out / rec.output_dir).parent)
    os.rmdir((out / rec.output_dir).parent.parent)
    lines = (out / "results.jsonl").read_text().replace(json.dumps(rec.output_dir), json.dumps(str(old)))
    (out / "results.jsonl").write_text(lines)
    return old


def test_a_rollout_folder_of_the_old_naming_still_resumes(workdir: Path, scripted_llm) -> None:
    scripted_llm.set_responder(SOLVE)
    data, cfg, out = _rows(workdir, ["a/b", "plain"]), write_config(workdir, "cfg"), workdir / "out"
    args = ["-c", str(cfg), "--dataset", str(data), "-o", str(out)]
    assert run_cli(args, scripted_llm).returncode == 0
    old = _as_written_before(out, "a/b")
    n = len(scripted_llm.requests)
    proc = run_cli(args, scripted_llm)
    assert proc.returncode == 0 and "0 rollouts to run" in proc.stderr, proc.stderr
    assert len(scripted_llm.requests) == n
    proc = run_cli([*args, "--redo-existing"], scripted_llm)  # the old folder moves to the new name
    assert proc.returncode == 0, proc.stderr
    rec = ResultsStore(out).load()[("a/b", "cfg", 0)]
    assert rec.output_dir == f"{folder_name('a/b')}/cfg/0" and rec.passed
    assert read_trajectory(out / rec.output_dir / "traj.json").instance_id == "a/b"
    assert not (out / old).exists()
