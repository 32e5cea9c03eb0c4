"""Request bodies built and encoded without redoing the history on every call.

A rollout's request repeats every earlier message, so encoding the whole body each call makes the
per-step cost grow with the rollout (≈0.5 ms per call by step 200 here). The items of a body's long
lists (the messages) are the same objects from call to call (`Message.wire` caches them, and messages
never change once appended), so each item's text is kept and reused: per call, only the new items are
encoded. The text is exactly what `json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))` gives.
"""

from __future__ import annotations

import json
import operator
import threading
from typing import Any

encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
LONG = 8  # lists shorter than this are encoded as a whole: caching them saves nothing


class BodyEncoder:
    """One per model client, shared by the rollouts using it. Each thread (one rollout at a time) keeps
    its last body's long lists and their item texts only, so the cache never outgrows one request."""

    def __init__(self) -> None:
        self._local = threading.local()

    def encode(self, body: dict[str, Any]) -> str:
        if not all(isinstance(k, str) for k in body):
            return encode(body)
        last: dict[str, tuple[list[Any], list[str]]] = getattr(self._local, "lists", {})
        kept: dict[str, tuple[list[Any], list[str]]] = {}
        parts = []
        for key, value in body.items():
            if isinstance(value, list) and len(value) >= LONG:
                texts = _item_texts(value, last.get(key))
                kept[key] = (list(value), texts)  # a copy: the caller may reuse its list
                text = "[" + ",".join(texts) + "]"
            else:
                text = encode(value)
            parts.append(encode(key) + ":" + text)
        self._local.lists = kept
        return "{" + ",".join(parts) + "}"


def _item_texts(items: list[Any], before: tuple[list[Any], list[str]] | None) -> list[str]:
    """Each item's text; the items held last time (the same objects: they are kept alive there, so
    their ids are theirs) reuse theirs. The usual case, the same history plus new messages, is
    recognised at C speed and only the new items are encoded."""
    if before is None:
        return [encode(x) for x in items]
    old_items, old_texts = before
    n = len(old_items)
    if len(items) >= n and all(map(operator.is_, old_items, items)):
        return old_texts + [encode(x) for x in items[n:]]
    known = dict(zip(map(id, old_items), zip(old_items, old_texts, strict=True), strict=True))
    texts = []
    for x in items:
        hit = known.get(id(x))
        texts.append(hit[1] if hit is not None and hit[0] is x else encode(x))
    return texts


class WireLists:
    """A body's message list (each message's cached wire form, in order), extended per call with the
    new messages only when the history is the same Message objects as last time (checked at C speed).
    Per thread, like BodyEncoder; the list handed out is a copy the caller may keep."""

    def __init__(self) -> None:
        self._local = threading.local()

    def build(self, messages: list[Any], protocol: str, convert: Any, flatten: bool = False) -> list[Any]:
        last = getattr(self._local, "last", None)
        if (last is not None and last[0] == protocol and len(messages) >= len(last[1])
                and all(map(operator.is_, last[1], messages))):
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
