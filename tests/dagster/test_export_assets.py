"""The export assets over graded partitions: the same files as `mimoagent export`, per format."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from dagster import AssetKey, DagsterInstance

from tests.dagster.conftest import pk
from tests.dagster.test_assets import ROLLOUT_KEYS, _register_inputs, _run


def _meta(instance: DagsterInstance, key: str) -> dict:
    [rec] = instance.fetch_materializations(AssetKey(key), limit=1).records
    return {k: v.value for k, v in rec.asset_materialization.metadata.items()}


def test_export_assets_write_each_format_for_the_latest_graded_partitions(tmp_path: Path, instance) -> None:
    data = _register_inputs(tmp_path, instance)
    _run(instance, ROLLOUT_KEYS, partition_key=pk(data, "greet-0", "good"))
    _run(instance, ROLLOUT_KEYS, partition_key=pk(data, "greet-1", "bad"))
    _run(
        instance,
        [AssetKey("sft_export"), AssetKey("rl_export"), AssetKey("atif_export")],
        run_config={"ops": {"sft_export": {"config": {"min_reward": 1.0}}}},
    )

    sft = _meta(instance, "sft_export")
    df = pl.read_parquet(sft["path"])
    assert sft["rollouts"] == 1 and df["instance_id"].to_list() == ["greet-0"]  # bad|greet-1 failed: reward 0
    assert df["config_name"].to_list() == ["good"] and df["reward"].to_list() == [1.0]

    rl = _meta(instance, "rl_export")  # the scripted endpoint was not asked for token ids here
    assert rl["rollouts"] == 0 and rl["left_out"] == 2 and "greet-0" in rl["left_out_rollouts"]
    assert len(json.loads(Path(rl["report"]).read_text())["skipped"]) == 2

    atif = _meta(instance, "atif_export")
    files = sorted(Path(atif["path"]).rglob("*.json"))
    assert atif["rollouts"] == 2 and [f.relative_to(atif["path"]).as_posix() for f in files] == [
        "greet-0/good/0.json",
        "greet-1/bad/0.json",
    ]
