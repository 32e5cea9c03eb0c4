"""What runs on a Ray worker node: the thread runner's `run_one`, in a scratch folder of that node.

The rollout writes where it would under `-o`, but below a private folder of the worker, so nothing here
assumes the driver's filesystem; the folder then travels back to the driver packed in the result, and the
driver alone writes `results.jsonl`. A `ray.cancel` from the driver (its Ctrl-C) arrives as a
KeyboardInterrupt: the rollout's commands are killed and its sandboxes removed before the task ends.
"""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
import threading
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from mimo_core.records.results import ResultRecord
from mimo_core.run.job import RolloutJob
from mimo_core.run.rollout import run_one

CANCEL_GRACE_S = 30.0  # how long a cancelled rollout gets to stop its commands and remove its sandboxes


class RemoteResult(BaseModel):
    """A finished rollout as it reaches the driver: its record and its folder as a gzip'd tar."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    record: ResultRecord
    files: bytes
    node: str = ""


def pack_dir(folder: Path) -> bytes:
    """The folder's contents (not the folder itself) as tar.gz bytes; level 1: JSON shrinks ~5x already."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        for entry in sorted(folder.iterdir()):
            tar.add(entry, arcname=entry.name)
    return buf.getvalue()


def run_remote(job: RolloutJob) -> RemoteResult:
    """One rollout on this node. `run_one` runs in a thread so that this (the task's main) thread can take
    the cancel and hand it to the rollout as the thread runner's Ctrl-C does."""
    scratch = Path(tempfile.mkdtemp(prefix=f"mimoagent-ray-{job.run_id}-"))
    local = job.model_copy(update={"output_dir": scratch})
    cancel = threading.Event()
    outcome: list[ResultRecord | BaseException] = []

    def target() -> None:
        try:
            outcome.append(run_one(local, cancel))
        except BaseException as e:  # a disk-full or a bug: re-raised below, so Ray reports it
            outcome.append(e)

    worker = threading.Thread(target=target, name="rollout-ray")
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return RemoteResult(record=outcome[0], files=pack_dir(scratch / job.rel_dir), node=_node_id())
    except KeyboardInterrupt:  # ray.cancel: stop the rollout like a Ctrl-C, wait for its cleanup
        cancel.set()
        from mimo_core.environments.live import interrupt_all

        interrupt_all()
        worker.join(CANCEL_GRACE_S)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _node_id() -> str:
    try:
        import ray

        return ray.get_runtime_context().get_node_id()
    except Exception:
        return ""
