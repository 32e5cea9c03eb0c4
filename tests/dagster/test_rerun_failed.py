"""Rerunning scattered failed partitions is a handful of runs, not one per partition (issue 35): the UI's
Launchpad launches `rerun_failed`, the daemon's `rerun_failed_in_chunks` sensor answers with chunked
`rerun_cells` runs; and a `rerun_cells` run reruns exactly its keys."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterEventType, DagsterInstance, DagsterRunStatus, RunsFilter

from mimo_assets.cli_recording.execute import execute_feed
from mimo_assets.cli_recording.feed import Feed, RecordingHeader
from mimo_assets.definitions import defs
from mimo_assets.instance.home import get_instance
from mimo_assets.partitions import dataset_name, partition_key
from mimo_assets.rerun import CELLS_OP, RERUN_OF_TAG, failed_partitions
from mimo_core.records.results import RESULTS_FILE, ResultRecord
from mimo_core.run.plan import RunRequest
from mimo_core.status import ExitStatus
from testkit.tasks import write_named_config, write_tasks
from tests.dagster.conftest import run_cli
from tests.dagster.test_daemon_backfill import _daemon
from tests.dagster.test_webserver_ui import _post, webserver  # noqa: F401 (a fixture)

GRADED = AssetKey("graded_results")
ROWS, FAILED_EVERY = 3000, 3  # 1,000 failed partitions, every third registered key
LAUNCH = """
mutation LaunchRun($executionParams: ExecutionParams!) {
  launchRun(executionParams: $executionParams) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}
"""


def _record_synthetic_run(folder: Path) -> list[str]:
    """A CLI run of ROWS rows under config `a` whose every third rollout ended in model_error, recorded
    through the real recording path; the failed partition keys."""
    data = write_tasks(folder, ROWS)
    cfg = write_named_config(folder, "a")
    out = folder / "out"
    out.mkdir()
    records = [
        ResultRecord(
            run_id="synthetic",
            instance_id=f"greet-{i}",
            config_name="a",
            exit_status=ExitStatus.MODEL_ERROR if i % FAILED_EVERY == 1 else ExitStatus.SUBMITTED,
            error="model_error: 503" if i % FAILED_EVERY == 1 else None,
            reward=None if i % FAILED_EVERY == 1 else 0.0,
            output_dir=f"greet-{i}/a/0",
        )
        for i in range(ROWS)
    ]
    (out / RESULTS_FILE).write_text("".join(r.model_dump_json() + "\n" for r in records))
    request = RunRequest(dataset=str(data), configs=[str(cfg)], output_dir=out, run_id="synthetic")
    feed = Feed(
        RecordingHeader(
            request=request,
            config_names=["a"],
            instance_ids=[r.instance_id for r in records],
            planned=[r.key for r in records],
        )
    )
    for r in records:
        feed.put(r)
    feed.close()
    assert execute_feed(feed, get_instance()) is None
    name = dataset_name(str(data))
    return [str(partition_key(name, r.instance_id, "a")) for r in records if r.infra_error]


def _sensor_has_ticked(instance: DagsterInstance, name: str) -> bool:
    return any(
        s.name == name and s.instigator_data is not None and getattr(s.instigator_data, "cursor", None)
        for s in instance.all_instigator_state()
    )


@pytest.fixture
def held_reruns(dagster_env) -> dict[str, str]:
    """The instance's run queue holds every rerun chunk (tag limit 0), so the test counts the runs the
    sensor launched without running 1,000 rollouts."""
    path = Path(dagster_env["DAGSTER_HOME"]) / "dagster.yaml"
    text = path.read_text()
    assert "run_queue:\n" in text
    path.write_text(
        text.replace(
            "run_queue:\n", f"run_queue:\n  tag_concurrency_limits:\n    - key: {RERUN_OF_TAG}\n      limit: 0\n", 1
        )
    )
    return dagster_env


def test_1000_scattered_failed_partitions_rerun_in_a_handful_of_runs(
    tmp_path: Path,
    held_reruns,
    webserver: str,  # noqa: F811
) -> None:
    failed = _record_synthetic_run(tmp_path / "run")
    instance = get_instance()
    assert failed_partitions(instance) == failed and len(failed) == 1000  # registered order, scattered
    with _daemon(tmp_path, **held_reruns):
        deadline = time.monotonic() + 120
        while not _sensor_has_ticked(instance, "rerun_failed_in_chunks"):
            assert time.monotonic() < deadline, (tmp_path / "daemon.log").read_text()[-3000:]
            time.sleep(0.5)
        # the Launchpad's "Launch run" on rerun_failed, with its config as it opens (empty: every failed one)
        params = {
            "selector": {
                "repositoryLocationName": "mimoagent",
                "repositoryName": "__repository__",
                "jobName": "rerun_failed",
            },
            "runConfigData": {},
        }
        answer = json.loads(
            _post(
                webserver + "/graphql", json.dumps({"query": LAUNCH, "variables": {"executionParams": params}}).encode()
            )
        )["data"]["launchRun"]
        assert answer["__typename"] == "LaunchRunSuccess", answer
        request_id = answer["run"]["runId"]
        expected = math.ceil(1000 / 100)  # MIMOAGENT_BACKFILL_PARTITIONS_PER_RUN's default
        deadline = time.monotonic() + 180
        while len(instance.get_runs(RunsFilter(tags={RERUN_OF_TAG: request_id}))) < expected:
            assert time.monotonic() < deadline, (tmp_path / "daemon.log").read_text()[-3000:]
            time.sleep(1)
        time.sleep(6)  # a later tick adds nothing
        chunks = instance.get_runs(RunsFilter(tags={RERUN_OF_TAG: request_id}))
    assert instance.get_run_by_id(request_id).status == DagsterRunStatus.SUCCESS
    assert len(chunks) == expected, len(chunks)  # 10 runs, not 1,000
    keys = [k for run in chunks for k in run.run_config["ops"][CELLS_OP]["config"]["partitions"]]
    assert sorted(keys) == sorted(failed) and len(set(keys)) == len(keys)  # each failed key once
    assert all(run.job_name == "rerun_cells" and run.status == DagsterRunStatus.QUEUED for run in chunks)


def test_a_rerun_cells_run_reruns_exactly_its_keys(tmp_path: Path, dagster_env, llm, monkeypatch) -> None:
    """A real CLI run of 4 rows whose first two rollouts ended in model_error: their partitions are the
    failed ones; one rerun_cells run over them materializes both and nothing else."""
    monkeypatch.setenv("MIMO_TEST_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("MIMO_TEST_API_KEY", "k")
    data = write_tasks(tmp_path / "data", 4)
    good = write_named_config(tmp_path, "good")
    llm.inject(503, times=6)
    run_cli(["-c", str(good), "--dataset", str(data), "--workers", "1", "-o", str(tmp_path / "out")], llm, dagster_env)
    instance = get_instance()
    failed = failed_partitions(instance)
    assert len(failed) == 2, failed
    before = set(instance.get_materialized_partitions(GRADED))
    result = defs.resolve_job_def("rerun_cells").execute_in_process(
        instance=instance, run_config={"ops": {CELLS_OP: {"config": {"partitions": failed, "workers": 1}}}}
    )
    assert result.success
    stored = instance.get_records_for_run(result.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION).records
    graded = {m.partition for m in (r.event_log_entry.asset_materialization for r in stored) if m.asset_key == GRADED}
    assert graded == set(failed)  # exactly its keys
    assert failed_partitions(instance) == []
    assert set(instance.get_materialized_partitions(GRADED)) == before | set(failed)
