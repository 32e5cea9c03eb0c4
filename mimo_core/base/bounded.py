"""Parsing with limits: no input can make a load take unbounded time, memory or stack.

A config or a row is text from anyone. Unchecked, `-c /dev/zero` reads forever, ten thousand `[` blow
the stack, a YAML alias bomb (`a: &a [x, x]`, `b: &b [*a, *a]`, ...) expands to billions of nodes in
the first walk over it, and a key given twice silently keeps the last value. Here each is refused with
the reason: sizes are capped while reading, depth and the size of the tree with every alias expanded
are counted from the parser's event stream (in C) before anything is built.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import yaml

MAX_CONFIG_BYTES = 1 << 20  # a config file or an override; real ones are a few KiB
MAX_ROW_BYTES = 256 << 20  # one dataset line: rows may carry a whole repository as an archive
MAX_DEPTH = 64  # nesting of mappings and lists
MAX_NODES = 100_000  # values in a config once every alias is expanded


class TooBig(ValueError):
    """The input passes a limit; the message says which."""


def read_capped(path: Path, limit: int) -> bytes:
    """All of the file, or TooBig once more than `limit` bytes come (a device or FIFO never ending)."""
    with open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise TooBig(f"larger than {limit // 1024} KiB; this is not a config file")
    return data


def read_lines(fh: BinaryIO, limit: int) -> Iterator[tuple[int, bytes | None]]:
    """(line number, line) of a binary file; the last one is (number, None) when that line is longer
    than `limit`: the file is read no further."""
    number = 0
    while True:
        line = fh.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) <= limit or line.endswith(b"\n"):
            yield number, line
            continue
        yield number, None
        return


def _yaml_shape(text: str) -> None:
    """Depth, expanded size and anchors from the event stream, before a tree is composed."""
    sizes: dict[str, int] = {}  # anchor -> values under it, aliases expanded
    open_anchors: set[str] = set()
    stack: list[list[Any]] = [[None, 0]]  # [anchor, size so far] per open collection
    total = 0
    for event in yaml.parse(text, Loader=yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(stack) > MAX_DEPTH:
                raise TooBig(f"nested more than {MAX_DEPTH} levels deep")
            stack.append([event.anchor, 1])
            if event.anchor:
                open_anchors.add(event.anchor)
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            anchor, size = stack.pop()
            if anchor:
                open_anchors.discard(anchor)
                sizes[anchor] = size
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor in open_anchors:
                raise TooBig(f"the alias *{event.anchor} refers to itself")
            size = sizes.get(event.anchor, 1) if event.anchor else 1  # (an undefined one: the parser's error, later)
        else:
            continue
        stack[-1][1] += size
        total += size
        if total > MAX_NODES or stack[-1][1] > MAX_NODES:
            raise TooBig(f"more than {MAX_NODES:,} values once its aliases are expanded")


# A base chosen at run time (libyaml's loader where it is built in): mypy takes only a static base class.
class _UniqueKeyLoader(yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):  # type: ignore[misc]
    """Safe YAML where a key given twice in one mapping is an error, not "the last one wins"."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: the constructor reports it
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, f"found the key {key!r} twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """`yaml.safe_load` within the limits above; TooBig or yaml.YAMLError otherwise."""
    _yaml_shape(text)
    return yaml.load(text, Loader=_UniqueKeyLoader)


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """TooBig if `value` (parsed JSON) nests deeper than `limit`; iterative, so any depth is safe."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            raise TooBig(f"nested more than {limit} levels deep")
        stack.extend((c, depth + 1) for c in children)


def load_json(text: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """`json.loads` that refuses deep nesting (TooBig) instead of overflowing the stack; a syntax error
    is json.JSONDecodeError as usual."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooBig(f"nested more than {limit} levels deep") from None
    check_depth(value, limit)
    return value
