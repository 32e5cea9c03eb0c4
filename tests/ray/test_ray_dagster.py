"""Dagster with the Ray runner: the `evaluate` job run on the cluster through its `batch_runner` resource
(set in run config), and a CLI `--runner ray` run (on the local cluster it starts) recorded into Dagster
as a thread run is."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance

from mimo_assets.definitions import defs
from mimo_core.records.results import ResultsStore
from testkit.ray_cluster import RayTestCluster
from testkit.tasks import write_named_config, write_tasks
from tests.dagster.conftest import dagster_env, llm, pk, run_cli  # noqa: F401 - fixtures used here

GRADED = AssetKey("graded_results")


@pytest.fixture
def instance(dagster_env, llm, monkeypatch: pytest.MonkeyPatch) -> DagsterInstance:  # noqa: F811
    monkeypatch.setenv("MIMO_TEST_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("MIMO_TEST_API_KEY", "k")
    from mimo_assets.instance.home import get_instance

    return get_instance()


def _ran_on_ray(out: Path) -> int:
    return sum(
        "ran on Ray node" in (out / r.output_dir / "instance.log").read_text()
        for r in ResultsStore(out).load().values()
    )


def test_evaluate_job_runs_on_the_ray_cluster_given_in_run_config(
    tmp_path: Path,
    instance: DagsterInstance,
    ray_test_cluster: RayTestCluster,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for k, v in ray_test_cluster.env.items():
        monkeypatch.setenv(k, v)
    data, good = write_tasks(tmp_path, 3), write_named_config(tmp_path, "good")
    out = tmp_path / "eval"
    run = {
        "ops": {
            "evaluate_op": {
                "config": {"dataset": str(data), "configs": [str(good)], "workers": 3, "output_dir": str(out)}
            }
        },
        "resources": {"batch_runner": {"config": {"runner": "ray", "ray_address": ray_test_cluster.address}}},
    }
    assert defs.resolve_job_def("evaluate").execute_in_process(instance=instance, run_config=run).success
    assert len(instance.fetch_materializations(GRADED, limit=100).records) == 3
    assert all(r.passed for r in ResultsStore(out).load().values()) and _ran_on_ray(out) == 3


def test_cli_ray_run_on_its_own_local_cluster_is_recorded_into_dagster(
    tmp_path: Path,
    dagster_env,  # noqa: F811
    llm,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No --ray-address and no $RAY_ADDRESS: the run starts a local Ray cluster of its own, then stops it."""
    from mimo_assets.instance.home import get_instance

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    data, good = write_tasks(tmp_path, 2), write_named_config(tmp_path, "good")
    out = tmp_path / "out"
    ray_tmp = tempfile.mkdtemp(prefix="mray-", dir="/tmp")  # short: Ray's socket paths must stay < 108 bytes
    try:
        run_cli(
            ["-c", str(good), "--dataset", str(data), "-o", str(out), "--workers", "2", "--runner", "ray"],
            llm,
            {**dagster_env, "RAY_TMPDIR": ray_tmp},
        )
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert _ran_on_ray(out) == 2
    records = get_instance().fetch_materializations(GRADED, limit=100).records
    assert sorted(r.partition_key for r in records) == [pk(data, "greet-0", "good"), pk(data, "greet-1", "good")]
