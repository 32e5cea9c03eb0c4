"""One test per dataset-type inference rule (docs/datasets.md, "Dataset types"), first match wins."""

from __future__ import annotations

import pytest

from mimo_core.datasets.registry import infer_type

DEEPSWE_IMAGE = "public.ecr.aws/d3j8x8q7/swe-bench-202605:kh73snc7v9x3psk69rg4eqvjgs836v5a-v1.1"


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        pytest.param(
            {"dataset_type": "swe-bench", "image": DEEPSWE_IMAGE}, "opensource-code", id="1-dataset_type-wins"
        ),
        pytest.param({"collect": [], "image": "swebench/sweb.eval.x86_64.a__b-1"}, "deepswe", id="2-harbor-fields"),
        pytest.param({"FAIL_TO_PASS": "[]", "image": DEEPSWE_IMAGE}, "opensource-code", id="3-swe-bench-fields"),
        pytest.param({"crash_type": "SEGV", "image": "python:3.11"}, "arvo", id="4-arvo-fields"),
        pytest.param({"image": "n132/arvo:12345-vul"}, "arvo", id="5-arvo-image"),
        pytest.param({"image": DEEPSWE_IMAGE}, "deepswe", id="6-deepswe-image"),
        pytest.param({"image": "registry.example/deep-swe/task:1"}, "deepswe", id="6-deepswe-image-by-name"),
        pytest.param(
            {"image": "swebench/sweb.eval.x86_64.astropy__astropy-12907:latest"},
            "opensource-code",
            id="7-swe-bench-image",
        ),
        pytest.param({"image": "myorg/swe-bench-lite:django-1"}, "opensource-code", id="7-swe-bench-not-dated"),
        pytest.param({"image": "python:3.11"}, "generic", id="8-anything-else"),
        pytest.param({}, "generic", id="8-no-image"),
    ],
)
def test_inference_rule(row: dict, expected: str) -> None:
    assert infer_type({"instance_id": "x", "problem_statement": "p", **row}) == expected


def test_a_real_deepswe_row_without_dataset_type_loads_as_deepswe(tmp_path) -> None:
    import json

    from mimo_core.datasets.deepswe import DeepSWETask
    from mimo_core.datasets.loader import load_tasks

    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"instance_id": "httpx-1", "problem_statement": "p", "image": DEEPSWE_IMAGE}) + "\n")
    [task] = load_tasks(str(path))
    assert isinstance(task, DeepSWETask) and task.dataset_type == "deepswe"
