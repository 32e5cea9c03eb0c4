"""A backfill as the UI launches one: submitted to the instance, executed by a real `dagster-daemon`,
which launches the runs in their own processes. Multi-run policy: one run per config while a config's
instances fit in one chunk (`MIMOAGENT_BACKFILL_PARTITIONS_PER_RUN`, default 100), more runs side by side
when they do not; "missing only" semantics come from the partition selection, as in the UI's dialog. A
backfill whose rollouts hit infrastructure errors is failed, like its runs and its partitions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, DagsterRunStatus
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from dagster._core.utils import make_new_backfill_id

from mimo_assets.assets.rollouts import PARTITIONS_PER_RUN_ENV
from mimo_assets.definitions import defs
from mimo_assets.instance.home import POSTGRES_URL_ENV
from testkit.tasks import write_named_config, write_tasks
from tests.core.conftest import REPO
from tests.dagster.conftest import pk
from tests.dagster.test_assets import _partition_status

ROLLOUT_KEYS = [AssetKey("rollouts"), AssetKey("judge_scores"), AssetKey("graded_results")]


def _register(instance: DagsterInstance, data: Path, configs: list[Path]) -> None:
    job = defs.resolve_implicit_global_asset_job_def()
    plan = [p.stem for p in configs]
    for selection, run_config in (  # configs first: loading the dataset plans its rows for them
        ([AssetKey("config_files")], {"ops": {"config_files": {"config": {"paths": [str(p) for p in configs]}}}}),
        (
            [AssetKey("dataset_rows"), AssetKey("converted_jsonl")],
            {"ops": {"load_dataset": {"config": {"source": str(data), "plan_configs": plan}}}},
        ),
    ):
        assert job.execute_in_process(instance=instance, asset_selection=selection, run_config=run_config).success


def _submit(instance: DagsterInstance, keys: list[str]) -> str:
    from dagster._core.definitions.partitions.context import partition_loading_context

    backfill_id = make_new_backfill_id()
    with partition_loading_context(dynamic_partitions_store=instance):
        backfill = PartitionBackfill.from_asset_partitions(
            backfill_id=backfill_id,
            asset_graph=defs.resolve_asset_graph(),
            partition_names=keys,
            asset_selection=ROLLOUT_KEYS,
            backfill_timestamp=time.time(),
            tags={},
            dynamic_partitions_store=instance,
            all_partitions=False,
            title="test backfill",
            description=None,
            run_config=None,
        )
    instance.add_backfill(backfill)
    return backfill_id


@pytest.mark.parametrize("dagster_env", ["sqlite", "postgres"], indirect=True)
def test_ui_backfill_runs_through_the_daemon_in_one_run_not_one_per_partition(
    tmp_path: Path,
    dagster_env,
    llm,
    monkeypatch,
) -> None:
    monkeypatch.setenv("MIMO_TEST_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("MIMO_TEST_API_KEY", "k")
    data = write_tasks(tmp_path, 3)
    good, bad = write_named_config(tmp_path, "good"), write_named_config(tmp_path, "bad")
    instance = DagsterInstance.from_config(dagster_env["DAGSTER_HOME"])
    _register(instance, data, [good, bad])
    keys = [pk(data, f"greet-{i}", c) for i in range(3) for c in ("good", "bad")]
    backfill_id = _submit(instance, keys)

    with _daemon(tmp_path):
        _wait(instance, backfill_id, tmp_path)
        runs = [r for r in instance.get_runs() if r.tags.get("dagster/backfill") == backfill_id]
        assert len(runs) == 1, [r.tags for r in runs]  # one contiguous range of planned cells: one run, not 6
        assert instance.get_materialized_partitions(AssetKey("graded_results")) == set(keys)
        rewards = {
            m.asset_materialization.partition: m.asset_materialization.metadata["reward"].value
            for m in instance.fetch_materializations(AssetKey("graded_results"), limit=100).records
        }
        assert rewards == {k: (1.0 if k.startswith("good|") else 0.0) for k in keys}

        if POSTGRES_URL_ENV in dagster_env:
            return  # the redo is storage-independent: checked once, on SQLite (a backfill costs ~30 s)
        # A backfill over partitions that exist reruns them (the UI's "missing only" would select none);
        # here every model call of the rerun fails (infra errors): its runs are red and name the partitions,
        # but an infrastructure error does not unseat a graded result (docs/dagster.md#the-result-of-a-cell):
        # the partitions keep their earlier results, in the UI as in the tables, so the backfill, which
        # asked for results of them, completes.
        first_dirs = {
            m.asset_materialization.partition: m.asset_materialization.metadata["output_dir"].value
            for m in instance.fetch_materializations(AssetKey("graded_results"), limit=100).records
        }
        llm.inject(503, times=6)  # 2 rollouts × 3 attempts
        redo_id = _submit(instance, keys[:2])
        _wait(instance, redo_id, tmp_path, BulkActionStatus.COMPLETED_SUCCESS)
        redo_runs = [r for r in instance.get_runs() if r.tags.get("dagster/backfill") == redo_id]
        assert redo_runs and {r.status for r in redo_runs} == {DagsterRunStatus.FAILURE}
        failure = [
            e.dagster_event
            for r in redo_runs
            for e in instance.all_logs(r.run_id)
            if e.dagster_event is not None and e.dagster_event.is_step_failure
        ]
        messages = " ".join(str(f.step_failure_data.error) for f in failure)
        assert "kept their earlier result" in messages and all(k in messages for k in keys[:2]), messages
        for key in ("rollouts", "graded_results"):
            done, failed = _partition_status(instance, key)
            assert failed == set() and done == set(keys), key
        for key in ("rollouts", "graded_results"):  # each real result once; the kept ones logged again as they were
            kept, real = {}, {}
            for m in instance.fetch_materializations(AssetKey(key), limit=100).records:
                mat = m.asset_materialization
                into = kept if mat.tags.get("mimoagent/kept_after") == "infra_error" else real
                into[mat.partition] = into.get(mat.partition, 0) + 1
                assert mat.metadata["output_dir"].value == first_dirs[mat.partition]
            assert real == {k: 1 for k in keys} and kept == {k: 1 for k in keys[:2]}, key


def test_big_backfill_runs_in_chunks_side_by_side_each_partition_once(
    tmp_path: Path,
    dagster_env,
    llm,
    monkeypatch,
) -> None:
    """4 partitions of one config, 2 per run: Dagster's multi-run policy makes 2 runs that the run queue
    starts together; each run's `context.partition_keys` is its own 2 keys, so every partition gets one
    rollout, in one run."""
    monkeypatch.setenv("MIMO_TEST_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("MIMO_TEST_API_KEY", "k")
    data = write_tasks(tmp_path, 4)
    instance = DagsterInstance.from_config(dagster_env["DAGSTER_HOME"])
    _register(instance, data, [write_named_config(tmp_path, "good")])
    keys = [pk(data, f"greet-{i}", "good") for i in range(4)]
    backfill_id = _submit(instance, keys)

    with _daemon(tmp_path, **{PARTITIONS_PER_RUN_ENV: "2"}):
        _wait(instance, backfill_id, tmp_path)
    runs = [r for r in instance.get_runs() if r.tags.get("dagster/backfill") == backfill_id]
    assert len(runs) == 2, [r.tags for r in runs]
    by_run: dict[str, list[str]] = {}
    for m in instance.fetch_materializations(AssetKey("rollouts"), limit=100).records:
        by_run.setdefault(m.run_id, []).append(m.asset_materialization.partition)
    assert sorted(len(set(p)) for p in by_run.values()) == [2, 2] and sum(map(len, by_run.values())) == 4
    assert sorted(p for ps in by_run.values() for p in ps) == sorted(keys)
    assert instance.get_materialized_partitions(AssetKey("graded_results")) == set(keys)
    runs_dir = Path(dagster_env["MIMOAGENT_OUTPUT_ROOT"]) / "runs"
    for run_id, partitions in by_run.items():  # one rollout per partition, in the run that owns it
        rows = [json.loads(line) for line in (runs_dir / run_id / "results.jsonl").read_text().splitlines()]
        assert sorted(pk(data, row["instance_id"], "good") for row in rows) == sorted(partitions)
    first, second = sorted((instance.get_run_record_by_id(r.run_id) for r in runs), key=lambda rec: rec.start_time)
    assert second.start_time < first.end_time, "the chunks ran one after the other"


@contextmanager
def _daemon(tmp_path: Path, **env: str) -> Iterator[None]:
    """A real `dagster-daemon` on this test's instance; killed with the runs it launched."""
    with open(tmp_path / "daemon.log", "w") as log:
        daemon = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "dagster-daemon"), "run", "-w", "workspace.yaml"],
            cwd=REPO,
            env={**os.environ, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield
    finally:
        os.killpg(daemon.pid, signal.SIGKILL)  # the daemon and the run processes it launched
        daemon.wait()


def _wait(
    instance: DagsterInstance,
    backfill_id: str,
    tmp_path: Path,
    expected: BulkActionStatus = BulkActionStatus.COMPLETED_SUCCESS,
) -> None:
    deadline = time.monotonic() + 240
    busy = (BulkActionStatus.REQUESTED, BulkActionStatus.FAILING)
    while time.monotonic() < deadline and instance.get_backfill(backfill_id).status in busy:
        time.sleep(0.5)
    status = instance.get_backfill(backfill_id).status
    assert status == expected, (status, (tmp_path / "daemon.log").read_text()[-3000:])
