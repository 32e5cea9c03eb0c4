"""results.jsonl: one record per (instance, config, rollout), appended atomically, never duplicated.

A record is written last, after traj.json and reward_extra_info.json, so its presence is what marks a
rollout finished; a killed run leaves no record and the next run redoes that rollout.

Each line carries `schema_version` (history in docs/trajectory.md). Lines written before it was carried
are read as 1.0, their form; a line of a version this code does not know (a newer mimoagent wrote it) is
an error naming the file and line, never a torn line to move aside or a record to rewrite without its
new fields.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, computed_field, field_validator

from mimo_core.base.atomic_files import atomic_write_text
from mimo_core.base.redaction import redact
from mimo_core.errors import UnknownSchemaError
from mimo_core.status import INFRA_STATUSES, INPUT_STATUSES, ExitStatus

RESULTS_FILE = "results.jsonl"
RESULTS_SCHEMA_VERSION = "1.0"
RESULTS_READS = ("1.0",)  # every version `ResultsStore` reads; a line without one is 1.0


class ResultRecord(BaseModel):
    schema_version: str = RESULTS_SCHEMA_VERSION  # absent from lines written before it was carried: 1.0
    run_id: str
    instance_id: str
    config_name: str
    rollout_index: int = 0
    dataset_type: str = "generic"
    agent_type: str = "default"
    model_name: str | None = None
    exit_status: ExitStatus  # the rollout's status: the same value as its traj.json
    error: str | None = None
    reward: float | None = None  # null until graded
    passed: bool | None = None
    grading: dict[str, Any] = Field(default_factory=dict)  # key fields of reward_extra_info (f2p, p2p, ...)
    judge_score: float | None = None
    recalc: str | None = None  # None for agent runs; "gt" or the source directory for recalcs
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_tokens: int = 0  # of prompt_tokens, written to the provider's cache (Anthropic)
    cost: float = 0.0
    duration_s: float = 0.0
    budget_wait_s: float = 0.0  # of it, the model calls' waits for their endpoint's budget (traj.json timings)
    started_at: str | None = None
    ended_at: str | None = None
    output_dir: str  # the rollout's directory, relative to the run's output folder
    # Hash of the config (redacted) and the row this rollout ran with: a rollout that failed through the
    # input's fault (config_error, dataset_error) is done again only when this changes.
    input_fingerprint: str | None = None
    # Hash of the row's repository folder (paths, sizes, times) when it ran; None: no folder, or older line
    repo_fingerprint: str | None = None
    attempts: int = 1  # this attempt's number; earlier unfinished ones are kept in the rollout's attempts/
    # What the agent tried that the sandbox refused or that reached for the grade (traj.json has each one):
    containment_attempts: int = 0
    containment: dict[str, int] = Field(default_factory=dict)  # events per kind, lingering_processes included

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, version: str) -> str:
        if version not in RESULTS_READS:
            raise ValueError(f"unknown results schema_version {version!r}")
        return version

    # Derived from exit_status, so they cannot disagree with it; written for readers of the JSON lines.
    # (mypy takes no decorator over @property: pydantic's documented ignore for computed_field.)
    @computed_field  # type: ignore[prop-decorator]
    @property
    def infra_error(self) -> bool:
        """True: the machinery failed (model unreachable, sandbox crash, verifier crash); rerun on resume."""
        return self.exit_status in INFRA_STATUSES

    @computed_field  # type: ignore[prop-decorator]
    @property
    def error_class(self) -> ExitStatus | None:
        """The status, when the rollout ended in an error rather than a normal stop."""
        return self.exit_status if self.infra_error or self.error else None

    def is_finished(self, fingerprint: str | None) -> bool:
        """Nothing left to do for this rollout given the input a rerun would use (`fingerprint`)."""
        if self.infra_error:
            return False
        if self.exit_status in INPUT_STATUSES:
            return fingerprint is not None and fingerprint == self.input_fingerprint
        return True

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.instance_id, self.config_name, self.rollout_index)


def parse_record(line: str | bytes, where: str) -> ResultRecord:
    """One line of results.jsonl. ValueError: not a whole record (torn). UnknownSchemaError: a record of
    a schema_version this code does not read, which must be neither moved aside nor rewritten."""
    try:
        return ResultRecord.model_validate_json(line)
    except ValueError:
        try:
            version = json.loads(line).get("schema_version", RESULTS_SCHEMA_VERSION)
        except (ValueError, AttributeError):
            raise ValueError(f"{where}: not a record") from None
        if version not in RESULTS_READS:
            raise UnknownSchemaError(
                f"{where}: results schema_version {version!r} was written by a newer mimoagent (this one reads "
                f"{', '.join(RESULTS_READS)}): upgrade mimoagent, or write to another output folder"
            ) from None
        raise


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialise writers across threads and processes: an flock on the results file itself (not on a file
    beside it that a user may delete). A writer that replaces the file does so holding the lock on the old
    one; a writer that was waiting sees that the path names another file now and locks that one."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            current = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            current = False
        if current:
            break
        os.close(fd)  # (closing drops the lock)
    try:
        yield
    finally:
        os.close(fd)


_Key = tuple[str, str, int]
# Keys already in each results file, with the file (inode, size) they were read at: appends stay O(1) for
# runs of thousands of rollouts, and a file changed or replaced by another process is simply read again.
_key_index: dict[Path, tuple[tuple[int, int], set[_Key]]] = {}


class ResultsStore:
    def __init__(self, output_dir: str | Path):
        self.dir = Path(output_dir)
        self.path = self.dir / RESULTS_FILE

    def load(self) -> dict[_Key, ResultRecord]:
        """Last record per key wins; a torn final line (power loss mid-write) is ignored, not fatal."""
        return self.scan()[0]

    def scan(self) -> tuple[dict[_Key, ResultRecord], list[int]]:
        """`load()` plus the 1-based numbers of the lines that are not records (torn), for readers that
        report them rather than repair them (the viewer never writes)."""
        records: dict[_Key, ResultRecord] = {}
        torn: list[int] = []
        if not self.path.exists():
            return records, torn
        with open(self.path, errors="replace") as fh:
            for number, line in enumerate(fh, start=1):
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = parse_record(line, f"{self.path}:{number}")
                except ValueError:  # (UnknownSchemaError is not one: it goes up)
                    torn.append(number)
                    continue
                records[rec.key] = rec
        return records, torn

    def repair(self) -> Path | None:
        """Move lines that are not records (a torn last line from a killed or full-disk write, and anything
        glued after one) to `results.jsonl.torn-<time>`, so `polars.read_ndjson` reads the file again.
        Returns the file they went to, or None when there was nothing to repair."""
        if not self.path.exists():
            return None
        with _locked(self.path):
            data = self.path.read_bytes()
            good: list[bytes] = []
            bad: list[bytes] = []
            for number, line in enumerate(data.splitlines(), start=1):
                if not line.strip():
                    continue
                try:
                    parse_record(line, f"{self.path}:{number}")
                except ValueError:  # (UnknownSchemaError is not one: it goes up)
                    bad.append(line)
                    continue
                good.append(line)
            if not bad and (not data or data.endswith(b"\n")):
                return None
            aside = None
            if bad:
                aside = self.path.with_name(f"{RESULTS_FILE}.torn-{time.strftime('%Y%m%d-%H%M%S')}")
                note = (
                    f"# {len(bad)} line(s) of {self.path} that were not complete records, moved aside on "
                    f"{time.strftime('%Y-%m-%d %H:%M:%S')}; the rollouts they belonged to are redone.\n"
                )
                atomic_write_text(aside, note + b"\n".join(bad).decode("utf-8", "replace") + "\n")
            atomic_write_text(self.path, b"".join(line + b"\n" for line in good).decode())
            _key_index.pop(self.path.resolve(), None)
            return aside

    def finished(self, fingerprints: Mapping[_Key, str] | None = None) -> dict[_Key, ResultRecord]:
        """Records that count as done: `is_finished` for the key's fingerprint in `fingerprints` (without
        one, a record of the input's fault never counts: there is no saved work in it), and their
        trajectory is on disk (a record whose folder was lost, e.g. to a crash mid-swap during a redo,
        is done again)."""
        fingerprints = fingerprints or {}
        return {
            k: r
            for k, r in self.load().items()
            if r.is_finished(fingerprints.get(k)) and (self.dir / r.output_dir / "traj.json").exists()
        }

    def put(self, record: ResultRecord) -> None:
        """Append a new key with one write; replace an existing key by rewriting the file atomically."""
        self.dir.mkdir(parents=True, exist_ok=True)
        line = redact(record.model_dump_json()) + "\n"
        with _locked(self.path):
            keys = self._keys()
            if record.key not in keys:
                fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    end = os.fstat(fd).st_size
                    if end and os.pread(fd, 1, end - 1) != b"\n":  # a torn line from a killed writer
                        line = "\n" + line
                    os.write(fd, line.encode())
                    os.fsync(fd)
                    st = os.fstat(fd)
                finally:
                    os.close(fd)
                keys.add(record.key)
                _key_index[self.path.resolve()] = ((st.st_ino, st.st_size), keys)
                return
            existing = self.load()
            existing[record.key] = record
            atomic_write_text(self.path, "".join(r.model_dump_json() + "\n" for r in existing.values()))
            _key_index.pop(self.path.resolve(), None)

    def _keys(self) -> set[_Key]:
        path = self.path.resolve()
        try:
            st = path.stat()
            version = (st.st_ino, st.st_size)
        except FileNotFoundError:
            version = (0, 0)
        cached = _key_index.get(path)
        if cached is not None and cached[0] == version:
            return cached[1]
        keys = set(self.load())
        _key_index[path] = (version, keys)
        return keys
