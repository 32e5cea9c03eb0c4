"""scripts/convert_deepswe.py on the shared DeepSWE samples, on the demo tasks and on broken tasks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def convert(src: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "convert_deepswe.py"), "--src", str(src), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_deepswe_samples_convert_with_everything_grading_needs(tmp_path: Path, harbor_samples: Path) -> None:
    proc = convert(harbor_samples, tmp_path / "out.jsonl")
    assert proc.returncode == 0, proc.stderr
    out = {r["instance_id"]: r for r in rows(tmp_path / "out.jsonl")}
    assert len(out) == 4
    r = out["httpx-streaming-json-iteration"]
    assert r["dataset_type"] == "deepswe" and r["cwd"] == "/app" and r["verifier_mode"] == "separate"
    assert r["image"].startswith("public.ecr.aws/") and r["cpus"] == 2 and r["memory_mb"] == 8192
    assert r["network"] is False and r["verifier_network"] is False
    assert r["verifier_timeout_sec"] == 1800.0 and r["agent_timeout_sec"] == 5400.0
    assert "git diff --binary b5addb64" in r["collect"][0]["command"] and r["collect"][0]["timeout_sec"] == 300.0
    assert r["artifacts"] == ["/logs/artifacts/model.patch"]
    assert json.loads(r["test_files"]["config.json"])["f2p_node_ids"]
    assert r["problem_statement"].startswith("httpx responses")
    assert r["gold_patch"] is None and r["solution_script"] is None  # missing optional files are fine
    assert r["metadata"]["base_commit_hash"] == "b5addb64f0161ff6bfe94c124ef76f6a1fba5254"
    assert r["build_timeout_sec"] == 1800.0 and r["verifier_build_timeout_sec"] == 1800.0
    # the samples ship without their scripts: every task is reported and marked, one line each
    assert all(row["verifier_files_missing"] == ["tests/test.sh"] for row in out.values())
    assert sorted(line.split(":")[1].split()[-1] for line in proc.stderr.splitlines()) == sorted(out)


def test_a_sample_row_without_dataset_type_is_inferred_deepswe_from_its_image(
    tmp_path: Path, harbor_samples: Path
) -> None:
    from mimo_core.datasets.registry import infer_type

    assert convert(harbor_samples, tmp_path / "out.jsonl").returncode == 0
    for row in rows(tmp_path / "out.jsonl"):
        bare = {"instance_id": row["instance_id"], "problem_statement": row["problem_statement"], "image": row["image"]}
        assert infer_type(bare) == "deepswe", row["image"]


def test_demo_tasks_convert_to_the_committed_rows(tmp_path: Path) -> None:
    proc = convert(ROOT / "examples" / "demo", tmp_path / "demo.jsonl")
    assert proc.returncode == 0, proc.stderr
    converted = {r["instance_id"]: r for r in rows(tmp_path / "demo.jsonl")}
    committed = {r["instance_id"]: r for r in rows(ROOT / "examples" / "demo.jsonl")}
    assert len(converted) == 5
    for iid, row in converted.items():
        del row["dockerfile_dir"], committed[iid]["dockerfile_dir"]  # depends on where each JSONL is written
        assert row == committed[iid]
    check = subprocess.run([sys.executable, "examples/build_demo.py", "--check"], cwd=ROOT, capture_output=True)
    assert check.returncode == 0, check.stderr


def make_task(root: Path, name: str, toml: str, files: dict[str, bytes] | None = None) -> Path:
    task = root / name
    task.mkdir(parents=True)
    (task / "task.toml").write_text(toml)
    (task / "instruction.md").write_text(f"do {name}\n")
    for rel, data in (files or {}).items():
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_bytes(data)
    return task


def test_minimal_task_with_binary_test_file_converts(tmp_path: Path) -> None:
    make_task(
        tmp_path / "src",
        "tiny",
        'schema_version = "1.3"\n',
        {"tests/blob.bin": b"\x00\xff\x10", "tests/test.sh": b"echo 1\n", "environment/Dockerfile": b"FROM x\n"},
    )
    proc = convert(tmp_path / "src", tmp_path / "out" / "tiny.jsonl")
    assert proc.returncode == 0, proc.stderr
    (row,) = rows(tmp_path / "out" / "tiny.jsonl")
    assert row["instance_id"] == "tiny" and row["verifier_mode"] == "shared" and row["cwd"] == "/app"
    assert row["test_files"]["blob.bin"] == {"content": "AP8Q", "encoding": "base64"}
    assert row["dockerfile_dir"] == "../src/tiny/environment"


def test_bad_task_toml_names_the_task_folder(tmp_path: Path) -> None:
    make_task(tmp_path / "src", "good", 'schema_version = "1.3"\n')
    bad = make_task(tmp_path / "src", "broken", "[verifier\nnope")
    typed = make_task(tmp_path / "src", "typed", '[verifier]\ntimeout_sec = "soon"\n')
    proc = convert(tmp_path / "src", tmp_path / "out.jsonl")
    assert proc.returncode == 2 and not (tmp_path / "out.jsonl").exists()
    assert f"{bad}/task.toml: invalid TOML" in proc.stderr
    assert f"{typed}/task.toml: verifier.timeout_sec" in proc.stderr


def test_empty_source_is_an_error(tmp_path: Path) -> None:
    proc = convert(tmp_path, tmp_path / "out.jsonl")
    assert proc.returncode == 2 and "no Harbor tasks" in proc.stderr
