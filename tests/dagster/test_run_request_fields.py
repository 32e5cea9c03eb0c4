"""A run's fields are written once, in mimo_core.run.plan.RunRequest: the Dagster `evaluate` run config and the
`mimoagent` command line are derived from it and cannot drift from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import Field

from mimo_assets.evaluate import FILLED_BY_THE_RUN, EvaluateConfig
from mimo_core.cli import parser as cli
from mimo_core.errors import ConfigError
from mimo_core.run.plan import RunRequest, request_fields
from mimo_core.status import ExitStatus

RUN_ONLY = {"workers"}  # the evaluate job's own: how it runs, not what it plans


def _undeclared(fields: set[str]) -> dict[str, set[str]]:
    """Fields some door neither states nor explains (FILLED_BY_THE_RUN, NOT_FLAGS)."""
    dagster = set(EvaluateConfig.model_fields) - RUN_ONLY
    return {
        "evaluate": fields - dagster - set(FILLED_BY_THE_RUN),
        "cli": fields - set(cli.REQUEST_FLAGS) - set(cli.NOT_FLAGS),
    }


def test_every_request_field_is_stated_by_each_door_or_explained() -> None:
    fields = set(request_fields())
    assert _undeclared(fields) == {"evaluate": set(), "cli": set()}
    assert set(EvaluateConfig.model_fields) - RUN_ONLY <= fields  # nothing the request does not know
    dests = {a.dest for a in cli.build_parser()._actions}
    assert set(cli.REQUEST_FLAGS.values()) <= dests


def test_a_field_added_to_run_request_is_caught_for_the_door_that_lacks_it() -> None:
    class Bigger(RunRequest):
        max_cost: float | None = Field(default=None, description="stop the run above this cost")

    fields = set(request_fields()) | set(Bigger.model_fields) - {"selection"}
    assert _undeclared(fields)["cli"] == {"max_cost"}


def test_the_evaluate_config_carries_the_requests_descriptions_and_bounds() -> None:
    info = request_fields()
    for name, field in EvaluateConfig.model_fields.items():
        if name in RUN_ONLY:
            continue
        assert field.description and field.description.startswith(info[name].description), name
    bounds = {
        k: getattr(m, k)
        for m in EvaluateConfig.model_fields["num_rollouts"].metadata
        for k in ("ge", "le")
        if hasattr(m, k)
    }
    assert bounds == {"ge": 1, "le": 100_000}


def test_a_command_line_and_the_same_evaluate_config_make_the_same_request(tmp_path: Path) -> None:
    argv = [
        "-c",
        "a.yaml",
        "-c",
        "b.yaml",
        "--dataset",
        "d.jsonl",
        "--split",
        "test",
        "--filter",
        "^x",
        "--shuffle",
        "--slice",
        "0:5",
        "--seed",
        "7",
        "--paired",
        "--num-rollouts",
        "3",
        "--rerun-status",
        "model_error,grading_error",
        "-o",
        str(tmp_path / "out"),
        "--run-id",
        "r1",
    ]
    from_cli = cli.request_from_args(cli.build_parser().parse_args(argv))
    config = EvaluateConfig(
        dataset="d.jsonl",
        split="test",
        filter="^x",
        shuffle=True,
        slice="0:5",
        seed=7,
        paired=True,
        num_rollouts=3,
        rerun_status=["model_error", "grading_error"],
    )
    from_dagster = config.to_request(configs=["a.yaml", "b.yaml"], output_dir=tmp_path / "out", run_id="r1")
    assert from_cli == from_dagster
    assert from_cli.rerun_status == [ExitStatus.MODEL_ERROR, ExitStatus.GRADING_ERROR]


def test_a_bad_value_is_one_line_naming_the_flag(tmp_path: Path) -> None:
    args = cli.build_parser().parse_args(["-c", "a.yaml", "--dataset", "d", "-o", str(tmp_path), "--num-rollouts", "0"])
    with pytest.raises(ConfigError, match=r"^--num-rollouts: Input should be greater than or equal to 1$"):
        cli.request_from_args(args)
