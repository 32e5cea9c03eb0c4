"""What a refresh of the analytics keeps for the next one, so that a refresh after a CLI run or a backfill
reads what changed, not the whole history.

- **Each run folder's rows** (table.folder_frame): kept with the point its results.jsonl was read to
  (results_tail.ReadPoint); the next refresh parses only the lines appended since. A results file that was
  rewritten or replaced (another inode, shorter, or other bytes before that point: its sha1 is checked),
  a tail that holds a key already read, or a last line still being written: the folder is read whole.
- **The graded materializations and `failed` observations** (table.event_frame): kept with the storage id
  read up to; the next refresh reads the events after it, once dagster_private.asset_event_checkpoint
  says nothing at or below it changed (a wiped asset, a deleted run, an event committed late); else all.
- **The trajectories that validated** (path, size, modification time): `trajectories_validate` reads
  only the new or changed ones.

Everything lives under `<output root>/tables/cache/` (files written atomically; a file named by a
description of its content, so a reader never mixes two refreshes' files). Deleting the folder makes the
next refresh read everything; a refresh given no folder (`RefreshCache(None)`) keeps nothing. Each kept
table is exactly what a whole read gives (tests/dagster/test_incremental_refresh.py).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
from dagster import DagsterInstance

from mimo_assets.analysis.table import EVENT_SCHEMA, event_frame, folder_frame
from mimo_assets.asset_keys import GRADED_RESULTS
from mimo_assets.dagster_private import asset_event_checkpoint, asset_event_summaries
from mimo_assets.results_tail import ReadPoint, read_tail
from mimo_core.version import __version__

CACHE_DIR = "cache"
VERSION = f"1:{__version__}"  # a change to what is kept, or to the code that reads it, starts afresh
_KEY = ["instance_id", "config_name", "rollout_index"]


def _name(*parts: str) -> str:
    return hashlib.sha1("\0".join(parts).encode()).hexdigest()[:20]


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def _write_parquet(df: pl.DataFrame, path: Path) -> None:
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    df.write_parquet(tmp)
    os.replace(tmp, path)


class RefreshCache:
    """One refresh's view of what earlier refreshes kept under `root` (None: keep nothing). Each folder
    and each event table is brought up to date once per object and then reused by its asset."""

    def __init__(self, root: Path | None):
        self.root = root
        self._folders: dict[str, pl.DataFrame] = {}
        self._events: dict[bool, pl.DataFrame] = {}
        self.read: dict[str, int] = {"records": 0, "events": 0, "trajectories": 0}  # parsed by this object

    @classmethod
    def of(cls, tables_dir: Path) -> RefreshCache:
        return cls(tables_dir / CACHE_DIR)

    def _dir(self, kind: str) -> Path | None:
        if self.root is None:
            return None
        path = self.root / kind
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _load(self, meta_path: Path | None) -> tuple[dict[str, Any], pl.DataFrame] | None:
        """A kept table and its description, when both are there, readable and of this VERSION."""
        if meta_path is None:
            return None
        try:
            meta = json.loads(meta_path.read_text())
            if meta.get("version") != VERSION:
                return None
            return meta, pl.read_parquet(meta_path.with_name(meta["table"]))
        except (OSError, ValueError, KeyError, pl.exceptions.PolarsError):
            return None

    def _keep(self, meta_path: Path | None, meta: dict[str, Any], df: pl.DataFrame, token: str) -> None:
        if meta_path is None:
            return
        try:
            old = str(json.loads(meta_path.read_text())["table"])
        except (OSError, ValueError, KeyError, TypeError):
            old = None
        table = f"{meta_path.stem}-{token}.parquet"
        _write_parquet(df, meta_path.with_name(table))
        _write_json(meta_path, {**meta, "version": VERSION, "table": table})
        if old is not None and old != table and Path(old).name == old:
            meta_path.with_name(old).unlink(missing_ok=True)

    # -- run folders -------------------------------------------------------------------------------------

    def folder(self, run_dir: Path) -> pl.DataFrame:
        """Every record of `run_dir` as table rows (table.folder_frame), as a whole read gives them."""
        key = str(run_dir)
        if key in self._folders:
            return self._folders[key]
        where = self._dir("folders")
        meta_path = where / f"{_name(key)}.json" if where else None
        kept = self._load(meta_path)
        point = ReadPoint(**kept[0]["point"]) if kept and kept[0].get("run_dir") == key else None
        read = read_tail(run_dir, point)
        df = None
        if not read.whole and kept is not None and not read.unterminated:
            new = folder_frame(read.records, run_dir)
            self.read["records"] += new.height
            repeats = new.select(_KEY).is_duplicated().any() or new.join(kept[1], on=_KEY, how="semi").height
            df = None if repeats else pl.concat([kept[1], new], how="vertical")
        if df is None:  # the whole file, as ResultsStore.load() reads it (a key's last record, in first place)
            read = read if read.whole else read_tail(run_dir, None)
            records = {r.key: r for r in read.records}
            records.update({r.key: r for r in read.unterminated})
            self.read["records"] += len(records)
            df = folder_frame(records.values(), run_dir)
        if read.point is not None and not read.unterminated and read.point != point:
            self._keep(meta_path, {"run_dir": key, "point": vars(read.point)}, df, read.point.digest[:16])
        self._folders[key] = df
        return df

    # -- events ------------------------------------------------------------------------------------------

    def events(self, instance: DagsterInstance, failed: bool = False) -> pl.DataFrame:
        """table.event_frame of every graded materialization (with `failed`: every `failed` observation)
        of `graded_results`, in storage order."""
        if failed in self._events:
            return self._events[failed]
        where = self._dir("events")
        identity = f"{instance.root_directory}\0{instance.event_log_storage.__class__.__name__}"
        meta_path = where / f"{_name(identity, str(failed))}.json" if where else None
        kept = self._load(meta_path)
        cursor, df = 0, pl.DataFrame(schema=EVENT_SCHEMA)
        if kept is not None and kept[0].get("identity") == identity:
            checkpoint = asset_event_checkpoint(instance, GRADED_RESULTS, failed, kept[0]["cursor"])
            if checkpoint is not None and list(checkpoint) == kept[0]["checkpoint"]:
                cursor, df = kept[0]["cursor"], kept[1]
        start = cursor
        summaries = []
        for summary in asset_event_summaries(instance, GRADED_RESULTS, observations=failed, after_storage_id=cursor):
            summaries.append(summary)
            cursor = max(cursor, summary.storage_id)
        self.read["events"] += len(summaries)
        new = event_frame(summaries, failed=failed)
        df = pl.concat([df, new], how="vertical") if new.height else df
        checkpoint = asset_event_checkpoint(instance, GRADED_RESULTS, failed, cursor)
        if checkpoint is not None and (kept is None or cursor != start or start != kept[0].get("cursor")):
            meta = {"identity": identity, "cursor": cursor, "checkpoint": list(checkpoint)}
            self._keep(meta_path, meta, df, f"{cursor}-{checkpoint[0]}")
        self._events[failed] = df
        return df

    # -- trajectories ------------------------------------------------------------------------------------

    def unvalidated(self, paths: list[str]) -> tuple[list[str], Callable[[list[str]], None]]:
        """The paths not validated before as they are now (size and modification time), and a function to
        call with those of them that validated."""
        where = self._dir("trajectories")
        meta_path = where / "validated.json" if where else None
        kept = self._load(meta_path)
        known: dict[str, tuple[int, int]] = {}
        if kept is not None:
            known = {p: (s, m) for p, s, m in kept[1].select("path", "size", "mtime_ns").iter_rows()}
        stats: dict[str, tuple[int, int]] = {}
        todo = []
        for path in paths:
            try:
                st = os.stat(path)
                stats[path] = (st.st_size, st.st_mtime_ns)
            except OSError:
                todo.append(path)  # read_trajectory says what is wrong with it
                continue
            if known.get(path) != stats[path]:
                todo.append(path)
        self.read["trajectories"] += len(todo)

        def validated(good: list[str]) -> None:
            if not good:
                return
            known.update({p: stats[p] for p in good if p in stats})
            df = pl.DataFrame(
                [(p, s, m) for p, (s, m) in known.items()],
                schema={"path": pl.String, "size": pl.Int64, "mtime_ns": pl.Int64},
                orient="row",
            )
            self._keep(meta_path, {}, df, _name(*sorted(good))[:16])

        return todo, validated
