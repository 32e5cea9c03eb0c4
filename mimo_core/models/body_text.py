"""Request bodies built, encoded and hashed without redoing the history on every call.

A rollout's request repeats every earlier message, so encoding the whole body each call makes the
per-step cost grow with the rollout (≈0.5 ms per call by step 200 here). The items of a body's long
lists (the messages) are the same objects from call to call (`Message.wire` caches them, and messages
never change once appended), so each item's text is kept and reused: per call, only the new items are
encoded. The text is exactly what `json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))` gives.
The SHA-1 that agent_msgs/ records for the bytes sent is carried on by the same rule: the hash state
after the history's items is kept, and each call hashes only its new items and the fields after them.
"""

from __future__ import annotations

import hashlib
import json
import operator
import threading
from typing import Any

encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
LONG = 8  # lists shorter than this are encoded as a whole: caching them saves nothing


class SentBody(str):
    """A request body's text as sent, with `sha1`: the SHA-1 of its UTF-8 bytes, known as it was built
    (agent_msgs/ records it without hashing the whole body again)."""

    sha1: str


class BodyEncoder:
    """One per model client, shared by the rollouts using it. Each thread (one rollout at a time) keeps
    its last body's long lists, their item texts and the hash state after the first long list's items
    only, so the cache never outgrows one request."""

    def __init__(self) -> None:
        self._local = threading.local()

    def encode(self, body: dict[str, Any]) -> str:
        """The body's text: a SentBody (with its hash) when every key is a string, else a plain str."""
        if not all(isinstance(k, str) for k in body):
            return encode(body)
        last: dict[str, tuple[list[Any], list[str]]] = getattr(self._local, "lists", {})
        kept: dict[str, tuple[list[Any], list[str]]] = {}
        parts: list[str] = []
        hashed: _HashState | None = None
        for key, value in body.items():
            if isinstance(value, list) and len(value) >= LONG:
                texts, same = _item_texts(value, last.get(key))
                kept[key] = (list(value), texts)  # a copy: the caller may reuse its list
                if hashed is None:  # the first long list: hash up to the end of its items
                    prefix = "{" + "".join(p + "," for p in parts) + encode(key) + ":["
                    hashed = _HashState.carry(getattr(self._local, "hash", None), prefix, texts, same)
                    self._local.hash = hashed
                    hashed_at = len(parts)
                text = "[" + ",".join(texts) + "]"
            else:
                text = encode(value)
            parts.append(encode(key) + ":" + text)
        self._local.lists = kept
        out = SentBody("{" + ",".join(parts) + "}")
        if hashed is None:
            out.sha1 = hashlib.sha1(out.encode()).hexdigest()
        else:
            h = hashed.state.copy()
            h.update(("]" + "".join("," + p for p in parts[hashed_at + 1 :]) + "}").encode())
            out.sha1 = h.hexdigest()
        return out


class _HashState:
    """SHA-1 of `prefix` and the first `n` item texts joined by commas (the body up to the list's `]`)."""

    __slots__ = ("prefix", "n", "state")

    def __init__(self, prefix: str, n: int, state: Any) -> None:
        self.prefix, self.n, self.state = prefix, n, state

    @classmethod
    def carry(cls, before: _HashState | None, prefix: str, texts: list[str], same: int) -> _HashState:
        """`same`: how many leading texts are the very ones of the last call. The last state is carried
        on only when its whole list is among them and the text before the list has not changed."""
        if before is not None and before.n <= same and before.prefix == prefix and before.n:
            h = before.state.copy()
            new = texts[before.n :]
            if new:
                h.update(("," + ",".join(new)).encode())
        else:
            h = hashlib.sha1((prefix + ",".join(texts)).encode())
        return cls(prefix, len(texts), h)


def _item_texts(items: list[Any], before: tuple[list[Any], list[str]] | None) -> tuple[list[str], int]:
    """Each item's text, and how many leading ones are the last call's very texts (the history kept).
    The items held last time (the same objects: they are kept alive there, so their ids are theirs)
    reuse theirs. The usual case, the same history plus new messages, is recognised at C speed and
    only the new items are encoded."""
    if before is None:
        return [encode(x) for x in items], 0
    old_items, old_texts = before
    n = len(old_items)
    if len(items) >= n and all(map(operator.is_, old_items, items)):
        return old_texts + [encode(x) for x in items[n:]], n
    known = dict(zip(map(id, old_items), zip(old_items, old_texts, strict=True), strict=True))
    texts = []
    for x in items:
        hit = known.get(id(x))
        texts.append(hit[1] if hit is not None and hit[0] is x else encode(x))
    return texts, 0


class WireLists:
    """A body's message list (each message's cached wire form, in order), extended per call with the
    new messages only when the history is the same Message objects as last time (checked at C speed).
    Per thread, like BodyEncoder; the list handed out is a copy the caller may keep."""

    def __init__(self) -> None:
        self._local = threading.local()

    def build(self, messages: list[Any], protocol: str, convert: Any, flatten: bool = False) -> list[Any]:
        last = getattr(self._local, "last", None)
        if (
            last is not None
            and last[0] == protocol
            and len(messages) >= len(last[1])
            and all(map(operator.is_, last[1], messages))
        ):
            start, out = len(last[1]), list(last[2])
        else:
            start, out = 0, []
        for m in messages[start:]:
            wire = m.wire(protocol, convert)
            if flatten:
                out.extend(wire)
            else:
                out.append(wire)
        self._local.last = (protocol, list(messages), out)
        return list(out)
