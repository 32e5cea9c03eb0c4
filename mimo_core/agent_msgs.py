"""The agent_msgs/ step files: every model call's exact request and its response, written as deltas.

A rollout's request grows by a few messages per call, so writing each whole request would make a
rollout's writes quadratic in its length. A step file holds the whole request only for the first call
(or when the chain cannot continue); later ones hold what changed since the previous call's request:

    {"step": 7, "prev": 6, "request_delta": {"lists": {"messages": {"keep": 12, "append": [...]}},
     "set": {...}, "drop": [...], "order": [...]}, "request_sha1": "...", "response": {...}}

`lists`: top-level lists whose first `keep` items are the previous request's (the history), followed by
`append`; `set`: other top-level fields that are new or changed; `drop`: fields gone; `order`: the
field order, only when it is not the previous order with new fields appended. `request_sha1` is the
SHA-1 of the exact bytes sent, so a reader proves its rebuild. docs/trajectory.md has the details.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import operator
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def step_path(msgs_dir: Path, step: int) -> Path:
    return msgs_dir / f"step_{step:04d}.json"


def _list_delta(prev: list[Any], cur: list[Any]) -> dict[str, Any]:
    n = len(prev)
    # The usual case, history kept and messages appended: the items that are the very same (cached wire)
    # objects are skipped at C speed; only the others are compared exactly, in Python.
    if len(cur) >= n:
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
    """Writes one rollout's step files, keeping the previous request in memory to write only the delta.
    Thread-safe: a CLI agent's recording proxy may hand over calls from several threads."""

    def __init__(self, msgs_dir: Path):
        self.dir = msgs_dir
        self._prev: dict[str, Any] | None = None
        self._prev_step = 0
        self._lock = threading.Lock()

    def record(self, step: int, request: dict[str, Any], response: dict[str, Any],
               request_json: str | None = None) -> None:
        """`request_json`: the request exactly as sent, when the caller has it (its hash is recorded);
        without it (a CLI agent's proxy hands over the parsed body) the hash is of its compact encoding."""
        sent = request_json if request_json is not None else encode_body(request)
        with self._lock:
            self._record(step, request, response, sent)

    def _record(self, step: int, request: dict[str, Any], response: dict[str, Any], sent: str) -> None:
        head: dict[str, Any] = {"step": step}
        if self._prev is None or step <= self._prev_step:  # first call, or a step written again: whole
            head["request"] = request
        else:
            head["prev"] = self._prev_step
            head["request_delta"] = request_delta(self._prev, request)
        head["request_sha1"] = hashlib.sha1(sent.encode()).hexdigest()
        head["response"] = response
        text = encode_body(head)
        tmp = self.dir / f".step_{step:04d}.json.tmp"
        tmp.write_text(text)
        tmp.replace(step_path(self.dir, step))  # a reader never sees half a file; no fsync: see results.py
        self._prev, self._prev_step = request, step


@dataclass
class StepRecord:
    step: int
    request: dict[str, Any]
    response: dict[str, Any]
    request_bytes: bytes  # the body as sent (verified against request_sha1 when the file has one)


def _load(msgs_dir: Path, step: int) -> dict[str, Any]:
    path = step_path(msgs_dir, step)
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise AgentMsgsError(f"{path}: cannot read ({type(e).__name__}: {e})") from e


def _finish(msgs_dir: Path, raw: dict[str, Any], request: dict[str, Any]) -> StepRecord:
    body = encode_body(request).encode()
    want = raw.get("request_sha1")
    if want is not None and hashlib.sha1(body).hexdigest() != want:
        raise AgentMsgsError(f"{step_path(msgs_dir, raw['step'])}: rebuilt request does not match the one sent")
    return StepRecord(raw["step"], request, raw.get("response", {}), body)


def read_step(msgs_dir: Path, step: int) -> StepRecord:
    """One call's exact request and response, following the chain back to the last whole request."""
    chain = [_load(msgs_dir, step)]
    while "request" not in chain[-1]:
        prev = chain[-1].get("prev")
        if not isinstance(prev, int) or prev >= chain[-1]["step"]:
            raise AgentMsgsError(f"{step_path(msgs_dir, chain[-1]['step'])}: neither a request nor a valid prev")
        chain.append(_load(msgs_dir, prev))
    request = chain[-1]["request"]
    for raw in reversed(chain[:-1]):
        request = apply_delta(request, raw["request_delta"])
    return _finish(msgs_dir, chain[0], request)


def steps(msgs_dir: Path) -> list[int]:
    return sorted(int(p.stem.removeprefix("step_")) for p in msgs_dir.glob("step_*.json"))


def iter_steps(msgs_dir: Path) -> Iterator[StepRecord]:
    """Every call of a rollout in order, each rebuilt once from the one before (linear in the files)."""
    known: dict[int, dict[str, Any]] = {}
    for step in steps(msgs_dir):
        raw = _load(msgs_dir, step)
        if "request" in raw:
            request = raw["request"]
        elif raw.get("prev") in known:
            request = apply_delta(known[raw["prev"]], raw["request_delta"])
        else:
            request = read_step(msgs_dir, step).request
        known = {step: request}
        yield _finish(msgs_dir, raw, request)
