"""agent_msgs/steps.jsonl: every model call's exact request and its response, appended as deltas.

A rollout's request grows by a few messages per call, so writing each whole request would make a
rollout's writes quadratic in its length. One line per call, appended to one file per rollout: the
first line holds the whole request (also a call whose step comes again or out of order); later ones
hold what changed since the previous line's request:

    {"schema_version": "1.0", "step": 7, "prev": 6, "request_delta": {"lists": {"messages": {"keep": 12,
     "append": [...]}}, "set": {...}, "drop": [...], "order": [...]}, "request_sha1": "...", "response": {...}}

`lists`: top-level lists whose first `keep` items are the previous request's (the history), followed by
`append`; `set`: other top-level fields that are new or changed; `drop`: fields gone; `order`: the
field order, only when it is not the previous order with new fields appended. `request_sha1` is the
SHA-1 of the exact bytes sent, so a reader proves its rebuild. One appended line rather than a file per
call: creating a file costs far more than appending a line, a directory's cost per new file grows with
its entries, and 100,000 rollouts of 200 calls would otherwise be 20 million files. Folders of the
earlier formats (`step_NNNN.json`, one file per call, whole or delta) and lines written before they
carried `schema_version` are read by the same functions; a line of a version this code does not know is
an `AgentMsgsError`. docs/trajectory.md has the details and the schema history.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import operator
import os
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mimo_core.base.redaction import redact

# The body encoding of every protocol module (models/_common.py): compact, UTF-8 as is.
encode_body = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class AgentMsgsError(ValueError):
    """A step file is missing, unreadable, or its rebuilt request does not match the bytes sent."""


def same_json(a: Any, b: Any) -> bool:
    """Equal AND encoded the same: `==` ignores dict key order and calls 1 == 1.0 == True, but the bytes
    sent differ (codex reorders its client_metadata keys between calls)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return len(a) == len(b) and all(ka == kb and same_json(a[ka], b[kb]) for ka, kb in zip(a, b, strict=True))
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return a == b


STEPS_FILE = "steps.jsonl"
STEPS_SCHEMA_VERSION = "1.0"
# Every version the readers take. Lines without one (written before it was carried) and the one-file-
# per-call folders have the same keys as 1.0.
STEPS_READS = ("1.0",)


def steps_file(msgs_dir: Path) -> Path:
    return msgs_dir / STEPS_FILE


def _legacy_path(msgs_dir: Path, step: int) -> Path:
    """A call's own file in the earlier formats."""
    return msgs_dir / f"step_{step:04d}.json"


def _list_delta(prev: list[Any], cur: list[Any]) -> dict[str, Any]:
    n = len(prev)
    # The usual case, history kept and messages appended: the items that are the very same (cached wire)
    # objects are skipped at C speed; only the others are compared exactly, in Python.
    if len(cur) >= n:
        if all(map(operator.is_, prev, cur)):
            return {"keep": n, "append": cur[n:]}
        others = itertools.compress(range(n), map(operator.is_not, prev, cur))
        if all(same_json(prev[i], cur[i]) for i in others):
            return {"keep": n, "append": cur[n:]}
    keep = 0
    for a, b in zip(prev, cur, strict=False):
        if a is not b and not same_json(a, b):
            break
        keep += 1
    return {"keep": keep, "append": cur[keep:]}


def request_delta(prev: dict[str, Any], cur: dict[str, Any]) -> dict[str, Any]:
    """What turns `prev` into `cur` (see the module docstring); empty parts are left out."""
    lists: dict[str, Any] = {}
    changed: dict[str, Any] = {}
    for key, value in cur.items():
        if key in prev:
            old = prev[key]
            if old is value or same_json(old, value):
                continue
            if isinstance(old, list) and isinstance(value, list):
                lists[key] = _list_delta(old, value)
                continue
        changed[key] = value
    delta: dict[str, Any] = {}
    if lists:
        delta["lists"] = lists
    if changed:
        delta["set"] = changed
    drop = [k for k in prev if k not in cur]
    if drop:
        delta["drop"] = drop
    natural = [k for k in prev if k in cur] + [k for k in cur if k not in prev]
    if natural != list(cur):
        delta["order"] = list(cur)
    return delta


def apply_delta(prev: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """The request `delta` was made from, given the previous one (which is not modified)."""
    drop = set(delta.get("drop", ()))
    out = {k: v for k, v in prev.items() if k not in drop}
    for key, part in delta.get("lists", {}).items():
        out[key] = list(prev[key][: part["keep"]]) + part["append"]
    out.update(delta.get("set", {}))
    if "order" in delta:
        out = {k: out[k] for k in delta["order"]}
    return out


class StepWriter:
    """Appends one rollout's calls to agent_msgs/steps.jsonl, keeping the previous request in memory to
    write only the delta. Thread-safe: a CLI agent's recording proxy may hand over calls from several
    threads. Each line goes out in one `write` on an O_APPEND descriptor opened per call (no descriptor
    outlives a call), so a reader sees whole lines, and at worst a torn last line after a crash."""

    def __init__(self, msgs_dir: Path):
        self.dir = msgs_dir
        self.path = steps_file(msgs_dir)
        self.path.touch()  # a rollout stopped before its first call reads back as no steps, not as no file
        self._prev: dict[str, Any] | None = None
        self._prev_step = 0
        self._redacted = False  # a line lost a secret: rebuilt requests differ from the bytes sent from then on
        self._lock = threading.Lock()

    def record(
        self, step: int, request: dict[str, Any], response: dict[str, Any], request_json: str | None = None
    ) -> None:
        """`request_json`: the request exactly as sent, when the caller has it (its hash is recorded:
        a models.body_text.SentBody brings it along, computed as the body was built); without it (a CLI
        agent's proxy hands over the parsed body) the hash is of its compact encoding."""
        sent = request_json if request_json is not None else encode_body(request)
        sha1 = getattr(sent, "sha1", None) or hashlib.sha1(sent.encode()).hexdigest()
        with self._lock:
            self._record(step, request, response, sha1)

    def _record(self, step: int, request: dict[str, Any], response: dict[str, Any], sha1: str) -> None:
        head: dict[str, Any] = {"schema_version": STEPS_SCHEMA_VERSION, "step": step}
        if self._prev is None or step <= self._prev_step:  # first call, or a step again / out of order: whole
            head["request"] = request
        else:
            head["prev"] = self._prev_step
            head["request_delta"] = request_delta(self._prev, request)
        head["request_sha1"] = sha1
        head["response"] = response
        text = encode_body(head)
        safe = redact(text)
        if safe != text or self._redacted:  # the rebuild is of the redacted text: no hash to prove it by
            self._redacted = True
            head.pop("request_sha1")
            head["redacted"] = True
            safe = redact(encode_body(head))
        line = (safe + "\n").encode()
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        try:
            if self._prev is None:
                _drop_torn_tail(fd)
            view = memoryview(line)
            while view:  # one write in practice; a short write (a full disk) is finished or raises
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        self._prev, self._prev_step = request, step


def _drop_torn_tail(fd: int) -> None:
    """A file left by a killed writer may end in half a line: cut it off before appending, so the new
    line is not glued to it. Only a first write looks (the file is this writer's after that)."""
    end = os.fstat(fd).st_size
    if end == 0 or os.pread(fd, 1, end - 1) == b"\n":
        return
    while end > 0:  # back to the last newline, a chunk at a time (a whole request's line may be long)
        start = max(0, end - (1 << 20))
        cut = os.pread(fd, end - start, start).rfind(b"\n")
        if cut >= 0:
            os.ftruncate(fd, start + cut + 1)
            return
        end = start
    os.ftruncate(fd, 0)  # no newline at all: the only line is the torn one


@dataclass
class StepRecord:
    step: int
    request: dict[str, Any]
    response: dict[str, Any]
    request_bytes: bytes  # the body as sent (verified against request_sha1 when the record has one)


@dataclass
class _Raw:
    where: str  # "<file>:<line>" or a legacy step file: what an error names
    data: dict[str, Any]


def _step_record(where: str, data: Any) -> _Raw:
    if not isinstance(data, dict) or not isinstance(data.get("step"), int):
        raise AgentMsgsError(f"{where}: not a step record (no integer `step`)")
    version = data.get("schema_version", STEPS_SCHEMA_VERSION)
    if version not in STEPS_READS:
        raise AgentMsgsError(
            f"{where}: agent_msgs schema_version {version!r} was written by a newer mimoagent "
            f"(this one reads {', '.join(STEPS_READS)})"
        )
    return _Raw(where, data)


def _read_lines(path: Path) -> list[_Raw]:
    """Line by line (the file is never held whole beside its records)."""
    out = []
    try:
        with open(path, "rb") as f:
            for n, raw in enumerate(f, 1):
                if not raw.endswith(b"\n"):
                    break  # a line torn by a killed writer: never a whole record
                try:
                    data = json.loads(raw)
                except ValueError as e:
                    raise AgentMsgsError(f"{path}:{n}: not a JSON record ({e})") from e
                out.append(_step_record(f"{path}:{n}", data))
    except OSError as e:
        raise AgentMsgsError(f"{path}: cannot read ({type(e).__name__}: {e})") from e
    return out


def _read_legacy(msgs_dir: Path) -> list[_Raw]:
    out = []
    for step in sorted(int(p.stem.removeprefix("step_")) for p in msgs_dir.glob("step_*.json")):
        path = _legacy_path(msgs_dir, step)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise AgentMsgsError(f"{path}: cannot read ({type(e).__name__}: {e})") from e
        out.append(_step_record(str(path), data))
    return out


def _records(msgs_dir: Path) -> list[_Raw]:
    """Every record, in the order written (legacy folders: by step, which is the order they were written)."""
    path = steps_file(msgs_dir)
    if path.exists():
        return _read_lines(path)
    if any(msgs_dir.glob("step_*.json")):
        return _read_legacy(msgs_dir)
    raise AgentMsgsError(f"{path}: cannot read (no such file, and no step files of the earlier format)")


def _rebuilt(records: list[_Raw]) -> Iterator[tuple[_Raw, dict[str, Any]]]:
    """Each record with its whole request, built from the request its `prev` names as last written. Only
    requests a later record still names are kept: memory follows the chain's width, not its length."""
    wanted = Counter(r.data.get("prev") for r in records if "request" not in r.data)
    known: dict[int, dict[str, Any]] = {}
    for raw in records:
        data = raw.data
        if "request" in data:
            request = data["request"]
        else:
            prev = data.get("prev")
            base = known.get(prev) if isinstance(prev, int) and prev < data["step"] else None
            if base is None or not isinstance(prev, int) or "request_delta" not in data:
                raise AgentMsgsError(
                    f"{raw.where}: step {data['step']} is neither a whole request nor a "
                    f"delta from an earlier step ({prev!r})"
                )
            request = apply_delta(base, data["request_delta"])
            wanted[prev] -= 1
            if wanted[prev] <= 0:
                known.pop(prev, None)
        if wanted[data["step"]] > 0:
            known[data["step"]] = request
        yield raw, request


def _finish(raw: _Raw, request: dict[str, Any]) -> StepRecord:
    body = encode_body(request).encode()
    want = raw.data.get("request_sha1")
    if want is not None and hashlib.sha1(body).hexdigest() != want:
        raise AgentMsgsError(f"{raw.where}: rebuilt request does not match the one sent")
    return StepRecord(raw.data["step"], request, raw.data.get("response", {}), body)


def read_step(msgs_dir: Path, step: int) -> StepRecord:
    """One call's exact request and response (its last record, if the step was written twice)."""
    found = None
    for raw, request in _rebuilt(_records(msgs_dir)):
        if raw.data["step"] == step:
            found = (raw, request)
    if found is None:
        raise AgentMsgsError(f"{msgs_dir}: no call with step {step}")
    return _finish(*found)


def steps(msgs_dir: Path) -> list[int]:
    """The calls' step numbers, in order, each once."""
    return sorted({r.data["step"] for r in _records(msgs_dir)})


def iter_steps(msgs_dir: Path) -> Iterator[StepRecord]:
    """Every call of a rollout in step order, each once (its last record), each rebuilt once from the one
    before it (linear in the file when the steps were written in order, the usual case)."""
    records = _records(msgs_dir)
    numbers = [r.data["step"] for r in records]
    if all(a < b for a, b in itertools.pairwise(numbers)):
        for raw, request in _rebuilt(records):
            yield _finish(raw, request)
        return
    last = {raw.data["step"]: (raw, request) for raw, request in _rebuilt(records)}
    for step in sorted(last):
        yield _finish(*last[step])
