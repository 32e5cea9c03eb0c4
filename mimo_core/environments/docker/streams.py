"""Byte plumbing of the docker backend: the multiplexed exec stream and tar archives from the engine."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from mimo_core.environments.shell import MAX_CAPTURE, HeadTail

__all__ = ["MAX_CAPTURE", "FrameReader", "link_target", "spool"]


def link_target(path: str, link: str) -> str:
    return link if link.startswith("/") else os.path.normpath(os.path.join(os.path.dirname(path), link))


def spool(stream: Any) -> Any:
    """Spool a tar stream to a temp file (memory up to 16 MB), so big outputs never sit in RAM."""
    fh = tempfile.SpooledTemporaryFile(max_size=16 * 1024 * 1024)  # noqa: SIM115 - returned to a with
    for chunk in stream:
        fh.write(chunk)
    fh.seek(0)
    return fh


class FrameReader:
    """Decode docker's multiplexed exec stream (8-byte headers); keep head and tail of long outputs."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.kept = HeadTail()

    def feed(self, chunk: bytes) -> None:
        self.buf += chunk
        while len(self.buf) >= 8:
            size = int.from_bytes(self.buf[4:8], "big")
            if len(self.buf) < 8 + size:
                return
            self.kept.feed(bytes(self.buf[8 : 8 + size]))
            del self.buf[: 8 + size]

    def text(self) -> str:
        return self.kept.bytes().decode("utf-8", errors="replace")
