"""Folder names of rollouts: one per (instance id, config name), never shared by two of them.

Ids come from datasets and may hold anything (`a/b`, `../../x`, 300 characters). A name that is already
a safe, short file name is used as it is, so ordinary ids keep readable folders; any other name is
sanitised, cut short and given a hash of the raw text. A name used as is never ends the way a hashed
one does (`-` + 12 hex digits) and never names a file the output folder holds itself, so two different
texts never get the same folder.

Folders written before this rule (`legacy_folder_name`: sanitised only, so `a/b` and `a_b` shared one)
are still found: a results.jsonl line names its own folder, and `rollout.run_one` moves an old folder
to its new name when it is the rollout's own.
"""

from __future__ import annotations

import hashlib
import re

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_HASHED = re.compile(r"-[0-9a-f]{12}$")
MAX_NAME = 100  # well under NAME_MAX (255 bytes), with room for `.attempt-<run id>` beside it
_KEPT = 80  # characters of the sanitised text kept before the hash
# Names the output folder uses for its own files: no rollout folder may take one.
RESERVED = frozenset({"results.jsonl", "mimoagent.lock", "attempts", "exports"})


def legacy_folder_name(text: str) -> str:
    """The name the rollout folder of `text` had before names were made injective."""
    return _UNSAFE.sub("_", text).strip("._") or "_"


def folder_name(text: str) -> str:
    """`text` itself when it is a safe, short name that cannot be mistaken for another's; else its
    sanitised head and a hash of the raw text."""
    clean = legacy_folder_name(text)
    if (
        clean == text
        and len(text) <= MAX_NAME
        and not _HASHED.search(text)
        and text.lower() not in RESERVED
        and not text.lower().startswith("results.jsonl")
    ):
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{clean[:_KEPT]}-{digest}"
