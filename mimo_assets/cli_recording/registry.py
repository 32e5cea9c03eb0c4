"""Where a CLI run says it is: one entry per run in `<Dagster home>/cli_runs/`, so Dagster records it after
the fact (ingest.py: the `cli_runs_to_record` sensor in the daemon, or the next `mimoagent-dagster` start)
and the CLI itself never waits on Dagster nor leaves anything running.

The CLI writes `<run>.json` (the RecordingHeader: its RunRequest and planned rollouts, plus its pid) when it
starts its rollouts, and `<run>.ended` when it is done; both atomically (a rename), so a reader never
sees half an entry. An entry is ready to record once it has ended, or once its process is gone (killed:
what it finished is in results.jsonl, and that is recorded). Whoever records an entry holds an exclusive
lock on it while it does (two recorders never record one run) and removes it once recorded. Light: no
Dagster import, the CLI writes these.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path

from pydantic import BaseModel

from mimo_assets.cli_recording.feed import Feed, RecordingHeader
from mimo_core.base.atomic_files import atomic_write_text
from mimo_core.records.results import ResultsStore

REGISTRY_DIR = "cli_runs"
ENTRY_VERSION = 2  # 2: the header records the run's dataset and config files (1: the recording read them again)


class Entry(BaseModel):
    """A CLI run as its registry entry states it."""

    schema_version: int = ENTRY_VERSION
    header: RecordingHeader
    pid: int
    pid_start: str  # the process's start time (/proc/<pid>/stat): a pid reused by another process differs
    boot_id: str  # a pid of an earlier boot is dead, whatever runs under that number now
    host: str
    started_at: str
    date: str  # the run's local date: its `mimoagent/date` tag, whenever it is recorded


def registry(home: Path) -> Path:
    return home / REGISTRY_DIR


def entry_path(home: Path, run_id: str) -> Path:
    """`<run id, made a safe file name>-<hash of it>.json`: distinct for every run id."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)[:80]
    return registry(home) / f"{safe}-{hashlib.sha1(run_id.encode()).hexdigest()[:8]}.json"


def ended_path(entry: Path) -> Path:
    return entry.with_suffix(".ended")


def _proc_start(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def write_entry(home: Path, header: RecordingHeader) -> Path:
    """The CLI's entry, before its first rollout."""
    pid = os.getpid()
    entry = Entry(
        header=header,
        pid=pid,
        pid_start=_proc_start(pid),
        boot_id=_boot_id(),
        host=socket.gethostname(),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        date=date.today().isoformat(),
    )
    path = entry_path(home, header.request.run_id)
    atomic_write_text(path, entry.model_dump_json() + "\n")
    return path


def mark_ended(path: Path) -> None:
    """The CLI is done (also after Ctrl-C: what it finished is final)."""
    atomic_write_text(ended_path(path), datetime.now(UTC).isoformat(timespec="seconds") + "\n")


def read_entry(path: Path) -> Entry | None:
    """None for a file that is gone or not an entry (a newer version's, or written by hand)."""
    try:
        return Entry.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return None


def state(path: Path, entry: Entry) -> str:
    """`ended`, `killed` (its process is gone without ending), `running`, or `elsewhere` (another host's
    run that has not ended: this host cannot tell whether it is alive)."""
    if ended_path(path).exists():
        return "ended"
    if entry.host != socket.gethostname():
        return "elsewhere"
    if entry.boot_id and entry.boot_id != _boot_id():
        return "killed"
    start = _proc_start(entry.pid)
    if not start or start != entry.pid_start or _zombie(entry.pid):
        return "killed"
    return "running"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def ready(home: Path) -> list[tuple[Path, Entry]]:
    """Entries ready to record (ended or killed), oldest first."""
    folder = registry(home)
    if not folder.is_dir():
        return []
    found = []
    for path in folder.glob("*.json"):
        entry = read_entry(path)
        if entry is not None and state(path, entry) in ("ended", "killed"):
            found.append((path, entry))
    return sorted(found, key=lambda item: (item[1].started_at, item[0].name))


def pending_run_ids(home: Path) -> set[str]:
    """Run ids of every entry not yet recorded (running or not): their records are theirs to record."""
    folder = registry(home)
    entries = (read_entry(p) for p in folder.glob("*.json")) if folder.is_dir() else ()
    return {e.header.request.run_id for e in entries if e is not None}


@contextmanager
def claimed(path: Path, wait: bool = False) -> Iterator[Entry | None]:
    """The entry, under an exclusive lock, or None: someone else holds it (unless `wait`), or it is gone
    (recorded meanwhile). Call `done(path)` inside to remove it once recorded."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        yield None
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield None
            return
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        yield read_entry(path) if same else None
    finally:
        os.close(fd)  # and the lock with it


def is_claimed(path: Path) -> bool:
    """Someone holds the entry's lock now (recording it)."""
    with claimed(path) as entry:
        return entry is None and path.exists()


def done(path: Path) -> None:
    """Remove a recorded entry (its lock holder calls this)."""
    for p in (ended_path(path), path):
        p.unlink(missing_ok=True)


def feed_from_entry(entry: Entry, path: Path) -> Feed:
    """The run's finished records, read back from its results.jsonl: those of its planned rollouts that it
    (this run id) wrote. Complete when the CLI ended; a killed run's feed is what it finished."""
    header = entry.header
    planned = set(header.planned)
    feed = Feed(header)
    for rec in ResultsStore(header.request.output_dir).load().values():
        if rec.run_id == header.request.run_id and rec.key in planned:
            feed.put(rec)
    feed.complete = ended_path(path).exists()
    feed.close()
    return feed
