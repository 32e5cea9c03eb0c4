"""A run folder's index brought up to date by reading only what its results.jsonl gained holds exactly what
a whole read gives: after appends, a torn line, a last line still being written, and a file rewritten
(a key written again, `repair`) or replaced by another file with the same size or inode number."""

from __future__ import annotations

import os
from pathlib import Path

from mimo_assets.cell_result import FolderIndex
from mimo_assets.results_tail import read_tail
from mimo_core.records.results import RESULTS_FILE, ResultRecord, ResultsStore
from mimo_core.status import ExitStatus


def _record(i: int, config: str = "a", k: int = 0, status: ExitStatus = ExitStatus.SUBMITTED) -> ResultRecord:
    return ResultRecord(
        run_id="r",
        instance_id=f"i{i}",
        config_name=config,
        rollout_index=k,
        exit_status=status,
        reward=1.0 if status == ExitStatus.SUBMITTED else None,
        output_dir=f"i{i}/{config}/{k}",
    )


def _cells(index: FolderIndex) -> dict:
    return {cell: [r.model_dump() for r in group] for cell, group in index.cells.items() if group}


def _whole(out: Path) -> dict:
    return _cells(FolderIndex(ResultsStore(out).load()))


def test_incremental_index_equals_a_whole_read_through_appends_rewrites_and_torn_lines(tmp_path: Path) -> None:
    out = tmp_path / "run"
    store = ResultsStore(out)
    for i in range(50):
        store.put(_record(i))
    index = FolderIndex.of(out)
    assert _cells(index) == _whole(out) and len(index.cells) == 50

    for i in range(50, 60):  # appended: only these lines are parsed
        store.put(_record(i, k=1))
    point = index._point
    assert point is not None
    read = read_tail(out, point)
    assert not read.whole and [r.instance_id for r in read.records] == [f"i{i}" for i in range(50, 60)]
    assert _cells(index.refresh()) == _whole(out)

    with open(out / RESULTS_FILE, "a") as fh:  # a torn line, then a record glued after it by the next put
        fh.write('{"run_id": "r", "instance_id": "torn"')
    assert _cells(index.refresh()) == _whole(out)
    store.put(_record(60))
    assert _cells(index.refresh()) == _whole(out) and ("i60", "a") in index.cells

    with open(out / RESULTS_FILE, "a") as fh:  # a last line without its newline counts, and is read again
        fh.write(_record(3, k=2).model_dump_json())
    assert _cells(index.refresh()) == _whole(out) and len(index.cells[("i3", "a")]) == 2
    with open(out / RESULTS_FILE, "a") as fh:
        fh.write("\n")
    assert _cells(index.refresh()) == _whole(out)

    store.put(_record(7, status=ExitStatus.MODEL_ERROR))  # a key written again: the file is rewritten
    assert read_tail(out, index._point).whole
    assert _cells(index.refresh()) == _whole(out) and index.cells[("i7", "a")][0].infra_error

    store.repair()  # the torn line moved aside: rewritten again
    assert _cells(index.refresh()) == _whole(out)


def test_a_file_replaced_in_place_with_other_bytes_is_read_whole(tmp_path: Path) -> None:
    """Same inode, same or larger size, other bytes in the part read before: the sha1 of that part
    catches it (an inode number can be reused by the file that replaces another)."""
    out = tmp_path / "run"
    store = ResultsStore(out)
    for i in range(20):
        store.put(_record(i))
    index = FolderIndex.of(out)
    path = out / RESULTS_FILE
    inode = os.stat(path).st_ino
    text = path.read_text().replace('"reward":1.0', '"reward":0.0', 1)  # same length, other bytes
    with open(path, "r+") as fh:  # written in place: the inode stays
        fh.write(text)
        fh.write(_record(99).model_dump_json() + "\n")
    assert os.stat(path).st_ino == inode
    assert read_tail(out, index._point).whole
    assert _cells(index.refresh()) == _whole(out)
    assert index.cells[("i0", "a")][0].reward == 0.0 and ("i99", "a") in index.cells

    path.unlink()  # gone: an empty index, as a whole read gives
    assert _cells(index.refresh()) == {} == _whole(out)
