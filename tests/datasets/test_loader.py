"""Loading rows from every source, validation errors that name file/row/field, and instance selection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mimo_core.datasets.deepswe import DeepSWETask
from mimo_core.datasets.generic import GenericTask
from mimo_core.datasets.loader import load_tasks, select_tasks
from mimo_core.datasets.opensource_code import OpenSourceCodeTask
from mimo_core.datasets.registry import get_dataset_type, infer_type
from mimo_core.errors import ConfigError, DatasetError

ROWS = [
    {"instance_id": "gen-1", "problem_statement": "do it", "eval_script": "echo 1 > /logs/verifier/reward.txt"},
    {
        "instance_id": "django__django-1",
        "repo": "django/django",
        "base_commit": "abc",
        "problem_statement": "p",
        "patch": "",
        "test_patch": "",
        "FAIL_TO_PASS": '["t1"]',
        "PASS_TO_PASS": "[]",
    },
    {"id": "deep-1", "dataset_type": "deepswe", "instruction": "i", "verifier_mode": "separate"},
]


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_jsonl_rows_are_validated_into_their_type_models(tmp_path: Path) -> None:
    tasks = load_tasks(str(write_jsonl(tmp_path / "d.jsonl", ROWS)))
    assert [type(t) for t in tasks] == [GenericTask, OpenSourceCodeTask, DeepSWETask]
    assert tasks[1].FAIL_TO_PASS == ["t1"] and tasks[1].image == "swebench/sweb.eval.x86_64.django_1776_django-1:latest"
    assert tasks[2].instance_id == "deep-1" and tasks[2].problem_statement == "i"
    assert tasks[0].source == str(tmp_path / "d.jsonl")


def test_parquet_file_loads(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"instance_id": f"p{i}", "problem_statement": f"task {i}"} for i in range(3)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "d.parquet")
    assert [t.instance_id for t in load_tasks(str(tmp_path / "d.parquet"))] == ["p0", "p1", "p2"]


def test_local_hugging_face_dataset_folder_loads_with_split(tmp_path: Path) -> None:
    import datasets

    rows = {
        "instance_id": ["a", "b"],
        "problem_statement": ["x", "y"],
        "FAIL_TO_PASS": ['["t"]', '["u"]'],
        "PASS_TO_PASS": ["[]", "[]"],
        "repo": ["o/r", "o/r"],
    }
    datasets.DatasetDict(
        {"test": datasets.Dataset.from_dict(rows), "dev": datasets.Dataset.from_dict(rows)}
    ).save_to_disk(str(tmp_path / "hf"))
    tasks = load_tasks(str(tmp_path / "hf"), split="test")
    assert [t.instance_id for t in tasks] == ["a", "b"] and tasks[0].dataset_type == "opensource-code"
    with pytest.raises(DatasetError, match="several splits"):
        load_tasks(str(tmp_path / "hf"))
    with pytest.raises(DatasetError, match="no split 'train'"):
        load_tasks(str(tmp_path / "hf"), split="train")


def test_folder_of_data_files_loads_through_load_dataset(tmp_path: Path) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    write_jsonl(folder / "train.jsonl", [{"instance_id": "f1", "problem_statement": "x"}])
    assert [t.instance_id for t in load_tasks(str(folder))] == ["f1"]


def test_bad_rows_are_all_reported_with_file_row_and_field(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "bad.jsonl",
        [
            {"instance_id": "ok", "problem_statement": "fine"},
            {"problem_statement": "no id"},
            {"instance_id": 7, "problem_statement": "id is not a string"},
            "{not json",
            {"instance_id": "x", "problem_statement": "p", "dataset_type": "nope"},
        ],
    )
    with pytest.raises(DatasetError) as err:
        load_tasks(str(path))
    msg = str(err.value)
    assert msg.startswith("4 bad row(s)")
    assert f"{path}: row 2: field instance_id" in msg
    assert f"{path}: row 3: field instance_id" in msg
    assert f"{path}: row 4: invalid JSON" in msg
    assert f"{path}: row 5: field dataset_type: unknown dataset_type 'nope'; known: arvo, deepswe" in msg


def test_duplicate_instance_ids_name_both_rows(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "dup.jsonl", [{"instance_id": "a", "problem_statement": "p"}] * 2)
    with pytest.raises(DatasetError, match=r"row 2: field instance_id: 'a' duplicates row 1"):
        load_tasks(str(path))


def test_missing_dataset_file_is_a_dataset_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not found"):
        load_tasks(str(tmp_path / "missing.jsonl"))


def test_type_is_inferred_from_fields_then_image() -> None:
    assert infer_type({"image": "arvo:12345-vul"}) == "arvo"
    assert infer_type({"image": "swebench/sweb.eval.x86_64.astropy__astropy-1"}) == "opensource-code"
    assert infer_type({"image": "swe-bench-202605:x", "verifier_mode": "shared"}) == "deepswe"
    assert infer_type({"image": "python:3.11"}) == "generic"
    assert infer_type({"dataset_type": "swe-bench"}) == "opensource-code"
    with pytest.raises(DatasetError, match="known: arvo, deepswe, generic, opensource-code"):
        get_dataset_type("bogus")


def _tasks(ids: list[str]) -> list:
    return [GenericTask(instance_id=i, problem_statement="p") for i in ids]


def test_selection_filters_then_shuffles_then_slices() -> None:
    tasks = _tasks([f"repo-a-{i}" for i in range(10)] + [f"repo-b-{i}" for i in range(10)])
    picked = select_tasks(tasks, slice="0:3", filter="^repo-b", shuffle=True, seed=1)
    assert len(picked) == 3 and all(t.instance_id.startswith("repo-b") for t in picked)
    # seeded and independent of the order rows came in
    again = select_tasks(list(reversed(tasks)), slice="0:3", filter="^repo-b", shuffle=True, seed=1)
    assert [t.instance_id for t in again] == [t.instance_id for t in picked]
    other = select_tasks(tasks, filter="^repo-b", shuffle=True, seed=2)
    assert [t.instance_id for t in other] != [t.instance_id for t in select_tasks(tasks, filter="^repo-b")]
    assert [t.instance_id for t in select_tasks(tasks, slice="2")] == ["repo-a-0", "repo-a-1"]
    assert [t.instance_id for t in select_tasks(tasks, slice="-1:")] == ["repo-b-9"]


@pytest.mark.parametrize("bad", ["a:b", "1:2:3:4", "x"])
def test_bad_slice_is_a_config_error(bad: str) -> None:
    with pytest.raises(ConfigError, match="--slice"):
        select_tasks(_tasks(["a"]), slice=bad)


def test_bad_filter_regex_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="--filter"):
        select_tasks(_tasks(["a"]), filter="(")


def test_harbor_folder_loads_directly() -> None:
    demo = load_tasks(str(Path(__file__).resolve().parents[2] / "examples" / "demo"))
    assert {t.dataset_type for t in demo} == {"deepswe"} and len(demo) == 5


def test_deepswe_samples_load_as_deepswe_with_a_separate_verifier(harbor_samples: Path) -> None:
    tasks = load_tasks(str(harbor_samples))
    assert len(tasks) == 4
    assert {t.dataset_type for t in tasks} == {"deepswe"}
    assert all(t.verifier_mode == "separate" for t in tasks)


@pytest.mark.parametrize(
    ("row", "old"),
    [
        ({"instance_id": "s", "problem_statement": "p", "repo": "o/r", "FAIL_TO_PASS": "[]"}, "patch"),
        ({"localId": 42, "crash_type": "null deref"}, "fix"),
    ],
)
def test_gold_patch_is_one_field_and_old_names_are_still_read(tmp_path: Path, row: dict, old: str) -> None:
    tasks = load_tasks(str(write_jsonl(tmp_path / "d.jsonl", [{**row, old: "the diff"}])))
    assert tasks[0].gold_patch == "the diff"
    assert old not in tasks[0].model_dump()
    assert get_dataset_type(tasks[0].dataset_type).gold_submission(tasks[0]) == "the diff"


def test_old_and_new_gold_patch_names_that_disagree_are_a_row_error(tmp_path: Path) -> None:
    row = {"instance_id": "s", "problem_statement": "p", "FAIL_TO_PASS": "[]", "patch": "a", "gold_patch": "b"}
    with pytest.raises(DatasetError, match="row 1.*`patch`.*differ"):
        load_tasks(str(write_jsonl(tmp_path / "d.jsonl", [row])))
