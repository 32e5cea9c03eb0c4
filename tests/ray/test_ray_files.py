"""The driver's side of a Ray rollout (`ray_runner.files.commit`) keeps `run_one`'s folder rules: an
unfinished earlier attempt moves to attempts/<n>/, a finished one being redone is replaced, the record is
written last and once. Real folders and records, no cluster needed."""

from __future__ import annotations

import tempfile
from pathlib import Path

from mimo_core.config import read_configs
from mimo_core.datasets.loader import load_tasks
from mimo_core.records.results import ResultsStore
from mimo_core.records.trajectory import read_trajectory
from mimo_core.run.job import RolloutJob
from mimo_core.run.ray.files import commit
from mimo_core.run.ray.remote import pack_dir
from mimo_core.run.rollout_record import write_failure
from mimo_core.status import ExitStatus
from testkit.tasks import write_config, write_tasks


def _job(tmp_path: Path, run_id: str) -> RolloutJob:
    [task] = load_tasks(str(write_tasks(tmp_path, 1)))
    [config] = read_configs([str(write_config(tmp_path, "cfg"))], [])
    return RolloutJob(task=task, config=config, output_dir=tmp_path / "out", run_id=run_id)


def _from_worker(job: RolloutJob, status: ExitStatus) -> tuple[object, bytes]:
    """A rollout folder and record as a worker sends them (written in a scratch folder, packed)."""
    with tempfile.TemporaryDirectory() as scratch:
        record = write_failure(job.model_copy(update={"output_dir": Path(scratch)}), status, "x")
        return record, pack_dir(Path(scratch) / job.rel_dir)


def test_an_unfinished_earlier_attempt_is_kept_and_counted(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MIMO_TEST_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MIMO_TEST_API_KEY", "k")
    first = _job(tmp_path, "run-1")
    write_failure(first, ExitStatus.MODEL_ERROR, "503")  # what an earlier run left: an infrastructure error
    job = _job(tmp_path, "run-2")
    record, files = _from_worker(job, ExitStatus.STEP_LIMIT)
    store = ResultsStore(job.output_dir)
    written = commit(job, record, files, store, node="n1")  # type: ignore[arg-type]
    final = job.output_dir / job.rel_dir
    assert written.attempts == 2 and read_trajectory(final / "traj.json").exit_status == ExitStatus.STEP_LIMIT
    assert read_trajectory(final / "attempts" / "1" / "traj.json").exit_status == ExitStatus.MODEL_ERROR
    assert (final / "instance.log").read_text().rstrip().endswith("ran on Ray node n1")
    assert list(store.load().values()) == [written]
    assert not list(final.parent.glob("*.attempt-*"))


def test_a_finished_rollout_being_redone_is_replaced_once_the_new_one_is_in(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MIMO_TEST_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MIMO_TEST_API_KEY", "k")
    old = _job(tmp_path, "run-1")
    store = ResultsStore(old.output_dir)
    store.put(write_failure(old, ExitStatus.SUBMITTED, "finished"))  # a finished rollout and its line
    job = _job(tmp_path, "run-2")
    record, files = _from_worker(job, ExitStatus.STEP_LIMIT)
    written = commit(job, record, files, store)  # type: ignore[arg-type]
    final = job.output_dir / job.rel_dir
    assert written.attempts == 1 and not (final / "attempts").exists()
    assert read_trajectory(final / "traj.json").run_id == "run-2"
    assert [r.run_id for r in store.load().values()] == ["run-2"]
    assert len((job.output_dir / "results.jsonl").read_text().splitlines()) == 1
    assert not list(final.parent.glob("*.replaced-*"))
