"""results.jsonl: atomic appends, replacement without duplicates, torn lines from killed writers."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mimo_core.records.results import ResultRecord, ResultsStore
from mimo_core.status import ExitStatus


def _rec(instance: str, k: int = 0, status: ExitStatus = ExitStatus.SUBMITTED, **kw: object) -> ResultRecord:
    return ResultRecord(
        run_id="r",
        instance_id=instance,
        config_name="c",
        rollout_index=k,
        exit_status=status,
        output_dir=f"{instance}/c/{k}",
        **kw,
    )


def test_concurrent_puts_write_each_key_once(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    recs = [_rec(f"i{i}", k) for i in range(50) for k in range(2)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(store.put, recs + recs[:20]))
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 100
    assert set(ResultsStore(tmp_path).load()) == {r.key for r in recs}


def _with_traj(tmp_path: Path, rec: ResultRecord) -> ResultRecord:
    (tmp_path / rec.output_dir).mkdir(parents=True, exist_ok=True)
    (tmp_path / rec.output_dir / "traj.json").write_text("{}")
    return rec


def test_replacing_a_record_rewrites_instead_of_duplicating(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    _with_traj(tmp_path, _rec("a"))
    _with_traj(tmp_path, _rec("b"))
    store.put(_rec("a", status=ExitStatus.MODEL_ERROR))
    store.put(_rec("b"))
    assert set(store.finished()) == {("b", "c", 0)}
    store.put(_rec("a", reward=1.0))
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 2
    assert store.load()[("a", "c", 0)].reward == 1.0 and set(store.finished()) == {("a", "c", 0), ("b", "c", 0)}


def test_torn_last_line_is_ignored_and_not_glued_to_the_next(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    store.put(_rec("a"))
    with open(tmp_path / "results.jsonl", "a") as fh:
        fh.write('{"run_id": "r", "instance_id": "half')  # a writer killed mid-line
    assert set(ResultsStore(tmp_path).load()) == {("a", "c", 0)}
    ResultsStore(tmp_path).put(_rec("b"))
    assert set(ResultsStore(tmp_path).load()) == {("a", "c", 0), ("b", "c", 0)}


def test_a_record_whose_trajectory_is_gone_is_not_finished(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    store.put(_with_traj(tmp_path, _rec("kept")))
    store.put(_rec("lost"))  # its folder never made it to disk
    assert set(store.load()) == {("kept", "c", 0), ("lost", "c", 0)}
    assert set(store.finished()) == {("kept", "c", 0)}


def test_an_input_fault_counts_as_finished_only_for_the_same_input(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    store.put(_with_traj(tmp_path, _rec("a", status=ExitStatus.CONFIG_ERROR, input_fingerprint="f1")))
    store.put(_with_traj(tmp_path, _rec("b", status=ExitStatus.DATASET_ERROR, input_fingerprint="f1")))
    key_a, key_b = ("a", "c", 0), ("b", "c", 0)
    assert set(store.finished({key_a: "f1", key_b: "f1"})) == {key_a, key_b}
    assert set(store.finished({key_a: "f2", key_b: "f1"})) == {key_b}  # a's config changed: done again
    assert store.finished() == {}  # without the current input nothing vouches for it
    assert not store.load()[key_a].infra_error
