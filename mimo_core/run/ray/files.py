"""The driver's side of a finished Ray rollout: unpack its folder into `-o`, then write its record.

The same order and the same folder moves as `run_one` on the driver's own disk: an unfinished earlier
attempt is kept under `attempts/<n>/`, a finished one being redone is replaced only once the new one is
complete, and the results.jsonl line comes last, so a driver killed at any point leaves no record whose
files are missing. The side folders use `run_one`'s names, so either runner clears the other's leftovers.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import time
from pathlib import Path

from mimo_core.records.results import ResultRecord, ResultsStore
from mimo_core.run.attempts import ATTEMPTS_DIR, is_finished_attempt, keep_failed_attempt
from mimo_core.run.job import RolloutJob
from mimo_core.run.rollout import adopt_legacy_folder


def unpack(data: bytes, into: Path) -> None:
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(into, filter="data")  # no absolute paths, links out of the folder or devices


def commit(job: RolloutJob, record: ResultRecord, files: bytes, store: ResultsStore, node: str = "") -> ResultRecord:
    """Put a rollout that finished on a worker into the run's output folder; returns the record written.
    `node` (the Ray node it ran on) ends its instance.log."""
    final = job.output_dir / job.rel_dir
    adopt_legacy_folder(job, final)
    for leftover in [*final.parent.glob(f"{final.name}.attempt-*"), *final.parent.glob(f"{final.name}.replaced-*")]:
        shutil.rmtree(leftover, ignore_errors=True)
    side = final.with_name(f"{final.name}.attempt-{job.run_id}")
    unpack(files, side)
    if node:
        with open(side / "instance.log", "a") as log:
            log.write(f"{time.strftime('%H:%M:%S')} ran on Ray node {node}\n")
    if is_finished_attempt(final):  # --redo-existing: swap the new attempt in, then drop the old one
        replaced = final.with_name(f"{final.name}.replaced-{job.run_id}")
        os.rename(final, replaced)
        os.rename(side, final)
        record = record.model_copy(update={"attempts": 1})
        store.put(record)
        shutil.rmtree(replaced, ignore_errors=True)
        return record
    kept = keep_failed_attempt(final, job.run_id)  # final is now absent or holds only attempts/
    if final.exists():
        os.rename(final / ATTEMPTS_DIR, side / ATTEMPTS_DIR)
        final.rmdir()
    os.rename(side, final)
    record = record.model_copy(update={"attempts": kept + 1})
    store.put(record)
    return record
