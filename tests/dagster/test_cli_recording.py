"""A `mimoagent` CLI run materializes the graph's assets in the shared Dagster instance."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance

from mimo_assets.instance.home import POSTGRES_URL_ENV
from mimo_assets.partitions import dataset_name, split_key
from mimo_core.viewer.urls import rollout_url
from testkit.postgres import bin_dir
from testkit.tasks import write_named_config, write_tasks
from tests.core.conftest import SECRET
from tests.dagster.conftest import ingest_finished_runs, pk, run_cli

ROLLOUT_ASSETS = ("rollouts", "graded_results")  # no judge in these configs: no judge_scores events


def _materializations(instance: DagsterInstance, key: str) -> list:
    return [r.asset_materialization for r in instance.fetch_materializations(AssetKey(key), limit=1000).records]


def _count(instance: DagsterInstance) -> dict[str, int]:
    keys = (*ROLLOUT_ASSETS, "judge_scores", "converted_jsonl", "config_files")
    return {k: len(_materializations(instance, k)) for k in keys}


@pytest.mark.parametrize("dagster_env", ["sqlite", "postgres"], indirect=True)
def test_cli_runs_materialize_each_partition_once_with_lineage_and_resume(
    tmp_path: Path,
    dagster_env,
    llm,
) -> None:
    data = write_tasks(tmp_path, 4)
    good, bad = write_named_config(tmp_path, "good"), write_named_config(tmp_path, "bad")
    args = ["-c", str(good), "-c", str(bad), "--dataset", str(data), "-o", str(tmp_path / "out"), "--workers", "4"]
    run_cli(args, llm, dagster_env)
    instance = DagsterInstance.from_config(dagster_env["DAGSTER_HOME"])
    planned = instance.get_dynamic_partitions("rollout")  # one config per instance at random: 4 cells, not 4 × 2
    assert sorted(split_key(k)[:2] for k in planned) == [(dataset_name(str(data)), f"greet-{i}") for i in range(4)]
    assert {split_key(k)[2] for k in planned} <= {"bad", "good"}
    for key in ROLLOUT_ASSETS:
        parts = [m.partition for m in _materializations(instance, key)]
        assert len(parts) == len(set(parts)) == 4, (key, parts)
        assert set(parts) == set(planned)  # every planned cell finished: nothing "missing"
    [run] = instance.get_runs()
    assert run.tags["mimoagent/source"] == "cli" and run.tags["mimoagent/date"]
    _assert_lineage(instance)

    first = _count(instance)
    assert first == {"rollouts": 4, "judge_scores": 0, "graded_results": 4, "converted_jsonl": 1, "config_files": 1}
    run_cli(args, llm, dagster_env)  # everything finished: nothing new, not even a run
    assert _count(instance) == first and len(instance.get_runs()) == 1
    run_cli([*args, "--redo-existing"], llm, dagster_env)
    assert _count(instance) == {
        "rollouts": 8,
        "judge_scores": 0,
        "graded_results": 8,
        "converted_jsonl": 1,
        "config_files": 1,
    }
    assert len(instance.get_runs()) == 2
    _assert_no_secret(dagster_env, Path(dagster_env["DAGSTER_HOME"]), tmp_path / "out")


def _assert_no_secret(env: dict[str, str], *folders: Path) -> None:
    """The API key reached the endpoint but no file of the instance (SQLite, compute logs), no row of its
    PostgreSQL database and no output file."""
    files = [p for folder in folders for p in folder.rglob("*") if p.is_file()]
    assert [str(p) for p in files if SECRET.encode() in p.read_bytes()] == []
    if POSTGRES_URL_ENV in env:
        dump = subprocess.run(
            [f"{bin_dir()}/pg_dump", "--data-only", env[POSTGRES_URL_ENV].replace("+psycopg2", "")],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        assert "graded_results" in dump and SECRET not in dump
    else:
        assert any(p.name.endswith(".db") for p in files)


def _assert_lineage(instance: DagsterInstance) -> None:
    """rollouts point at the dataset and config events; graded results at the rollouts (no judge ran)."""
    converted = instance.fetch_materializations(AssetKey("converted_jsonl"), limit=1).records[0]
    configs = instance.fetch_materializations(AssetKey("config_files"), limit=1).records[0]
    for mat in _materializations(instance, "rollouts"):
        assert mat.tags["dagster/input_event_pointer/converted_jsonl"] == str(converted.storage_id)
        assert mat.tags["dagster/input_event_pointer/config_files"] == str(configs.storage_id)
        meta = {k: v.value for k, v in mat.metadata.items()}
        assert meta["exit_status"] == "submitted" and meta["steps"] >= 1 and meta["tokens"] > 0
        assert Path(meta["trajectory"]).is_file() and meta["duration_s"] > 0 and "cost" in meta
        rollout_dir = Path(meta["trajectory"]).parent.relative_to(meta["output_dir"])
        assert meta["viewer"] == rollout_url(meta["output_dir"], str(rollout_dir))  # that rollout's viewer page
    rollout_versions = {m.partition: m.tags["dagster/data_version"] for m in _materializations(instance, "rollouts")}
    rollout_ids = {
        r.partition_key: r.storage_id for r in instance.fetch_materializations(AssetKey("rollouts"), limit=1000).records
    }
    for mat in _materializations(instance, "graded_results"):
        assert mat.tags["dagster/input_data_version/rollouts"] == rollout_versions[mat.partition]
        # Dagster's own link: the storage id of that partition's rollouts event, not "NULL"
        assert mat.tags["dagster/input_event_pointer/rollouts"] == str(rollout_ids[mat.partition])
        assert mat.metadata["reward"].value == (1.0 if mat.partition.startswith("good|") else 0.0)


def test_recalc_materializes_graded_results_only(tmp_path: Path, dagster_env, llm) -> None:
    data = write_tasks(tmp_path, 2)
    cfg = write_named_config(tmp_path, "bad")
    run_cli(["-c", str(cfg), "--dataset", str(data), "-o", str(tmp_path / "out")], llm, dagster_env)
    instance = DagsterInstance.from_config(dagster_env["DAGSTER_HOME"])
    rollouts_before = {m.partition: m.tags["dagster/data_version"] for m in _materializations(instance, "rollouts")}
    run_cli(
        [
            "-c",
            str(cfg),
            "--dataset",
            str(data),
            "-o",
            str(tmp_path / "regraded"),
            "--recalc-input",
            str(tmp_path / "out"),
        ],
        llm,
        dagster_env,
    )
    counts = _count(instance)
    assert (counts["rollouts"], counts["judge_scores"], counts["graded_results"]) == (2, 0, 4)
    latest = instance.fetch_materializations(AssetKey("graded_results"), limit=2).records
    for rec in latest:
        mat = rec.asset_materialization
        assert mat.metadata["recalc"].value == str(tmp_path / "out")
        assert mat.tags["dagster/input_data_version/rollouts"] == rollouts_before[mat.partition]
        assert mat.tags["dagster/input_event_pointer/rollouts"] != "NULL"


@pytest.mark.parametrize("dagster_env", ["sqlite", "postgres"], indirect=True)
def test_two_cli_runs_record_into_one_instance_at_once(tmp_path: Path, dagster_env, llm) -> None:
    import os
    import subprocess
    import sys

    from tests.core.conftest import REPO

    data = write_tasks(tmp_path, 6)
    env = {**os.environ, **dagster_env, "MIMO_TEST_BASE_URL": llm.openai_base_url, "MIMO_TEST_API_KEY": SECRET}
    env.pop("MIMOAGENT_OBSERVERS", None)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mimo_core.cli",
                "-c",
                str(write_named_config(tmp_path, name)),
                "--dataset",
                str(data),
                "-o",
                str(tmp_path / f"out-{name}"),
                "--workers",
                "3",
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("good", "bad")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0 and "not recorded" not in err, err
    assert len(ingest_finished_runs()) == 2
    instance = DagsterInstance.from_config(dagster_env["DAGSTER_HOME"])
    assert [r.status.value for r in instance.get_runs()] == ["SUCCESS", "SUCCESS"]
    assert instance.get_materialized_partitions(AssetKey("graded_results")) == {
        pk(data, f"greet-{i}", c) for c in ("good", "bad") for i in range(6)
    }


def test_paired_flag_runs_every_config_on_every_instance_and_random_ab_one_each(
    tmp_path: Path,
    dagster_env,
    llm,
) -> None:
    data = write_tasks(tmp_path, 4)
    good, bad = write_named_config(tmp_path, "good"), write_named_config(tmp_path, "bad")
    base = ["-c", str(good), "-c", str(bad), "--dataset", str(data), "--workers", "4"]
    run_cli([*base, "-o", str(tmp_path / "random")], llm, dagster_env)
    instance = DagsterInstance.from_config(dagster_env["DAGSTER_HOME"])
    random_parts = instance.get_materialized_partitions(AssetKey("graded_results"))
    assert len(random_parts) == 4 and {split_key(p)[1] for p in random_parts} == {f"greet-{i}" for i in range(4)}
    run_cli([*base, "--paired", "-o", str(tmp_path / "paired")], llm, dagster_env)
    assert instance.get_materialized_partitions(AssetKey("graded_results")) == {
        pk(data, f"greet-{i}", c) for c in ("good", "bad") for i in range(4)
    }


def test_a_key_echoed_in_an_error_body_never_reaches_the_dagster_event_log(
    tmp_path: Path,
    dagster_env,
    llm,
) -> None:
    """A 401 whose body echoes the key fails one rollout (model_auth_error): the failure reaches Dagster
    with the server's message, the key scrubbed, in no file of the instance nor of the output."""
    data = write_tasks(tmp_path, 2)
    good = write_named_config(tmp_path, "good")
    llm.inject(401, body={"error": {"message": f"Incorrect API key provided: {SECRET}.", "type": "invalid_api_key"}})
    out = tmp_path / "out"
    run_cli(["-c", str(good), "--dataset", str(data), "-o", str(out), "--workers", "1"], llm, dagster_env)
    statuses = sorted(json.loads(line)["exit_status"] for line in (out / "results.jsonl").read_text().splitlines())
    assert statuses == ["model_auth_error", "submitted"], statuses
    home = Path(dagster_env["DAGSTER_HOME"])
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert b"Incorrect API key provided: ***" in stored or POSTGRES_URL_ENV in dagster_env
    _assert_no_secret(dagster_env, home, out)
