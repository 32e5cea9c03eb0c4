"""The output folders a viewer serves: their records (read with `ResultsStore`, re-read when results.jsonl
changes, so a running run can be watched), filtered, sorted and paged for the run page. Reads only."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from mimo_core.cli.report import ConfigSummary, summarize
from mimo_core.errors import MimoError
from mimo_core.records.results import RESULTS_FILE, ResultRecord, ResultsStore
from mimo_core.viewer.urls import folder_slug

PAGE_SIZE = 100


class ViewerInputError(MimoError):
    """An argument of `mimoagent view` is not a readable output folder (exit 2)."""


def _reward_key(r: ResultRecord) -> tuple[bool, float]:
    return (r.reward is None, r.reward or 0.0)


SORTS: dict[str, Callable[[ResultRecord], Any]] = {
    "instance": lambda r: (r.instance_id, r.config_name, r.rollout_index),
    "config": lambda r: r.config_name,
    "k": lambda r: r.rollout_index,
    "status": lambda r: str(r.exit_status),
    "reward": _reward_key,
    "steps": lambda r: r.steps,
    "tokens": lambda r: r.prompt_tokens + r.completion_tokens,
    "cost": lambda r: r.cost,
    "duration": lambda r: r.duration_s,
}


class RolloutQuery(BaseModel):
    """The run page's filters, sort and page, as its URL query carries them."""

    config: str = ""
    status: str = ""
    reward: Literal["", "pass", "fail", "ungraded"] = ""
    reward_min: float | None = None
    reward_max: float | None = None
    q: str = ""  # text: instance id, config, status, model or error
    sort: Literal["instance", "config", "k", "status", "reward", "steps", "tokens", "cost", "duration"] = "instance"
    desc: bool = False
    page: int = Field(default=1, ge=1)

    def keep(self, r: ResultRecord) -> bool:
        if (self.config and r.config_name != self.config) or (self.status and r.exit_status != self.status):
            return False
        if self.reward == "pass" and not r.passed:
            return False
        if self.reward == "fail" and (r.reward is None or r.passed):
            return False
        if self.reward == "ungraded" and r.reward is not None:
            return False
        if self.reward_min is not None and (r.reward is None or r.reward < self.reward_min):
            return False
        if self.reward_max is not None and (r.reward is None or r.reward > self.reward_max):
            return False
        if self.q:
            text = " ".join((r.instance_id, r.config_name, r.exit_status, r.model_name or "", r.error or "")).lower()
            return self.q.lower() in text
        return True


class Page(BaseModel):
    rows: list[ResultRecord]
    matched: int
    total: int
    page: int
    pages: int


class OutputFolder:
    """One output folder: its records, read again whenever results.jsonl's size or mtime changes."""

    def __init__(self, path: Path):
        self.path = path.resolve()
        self.slug = folder_slug(self.path)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._records: list[ResultRecord] = []
        self._by_dir: dict[str, ResultRecord] = {}
        self._summaries: list[ConfigSummary] = []
        self._facets: tuple[list[str], list[str]] = ([], [])
        self.torn: list[int] = []

    @property
    def results(self) -> Path:
        return self.path / RESULTS_FILE

    def records(self) -> list[ResultRecord]:
        try:
            st = self.results.stat()
        except OSError as e:
            raise ViewerInputError(f"{self.results}: cannot read: {e.strerror or e}") from None
        stamp = (st.st_size, st.st_mtime_ns)
        with self._lock:
            if stamp != self._stamp:
                try:
                    found, torn = ResultsStore(self.path).scan()
                except OSError as e:
                    raise ViewerInputError(f"{self.results}: cannot read: {e.strerror or e}") from None
                self._records = sorted(found.values(), key=SORTS["instance"])
                self._by_dir = {r.output_dir: r for r in self._records}
                self._summaries = summarize(self._records)
                self._facets = (
                    sorted({r.config_name for r in self._records}),
                    sorted({str(r.exit_status) for r in self._records}),
                )
                self.torn, self._stamp = torn, stamp
            return self._records

    def query(self, q: RolloutQuery, page_size: int = PAGE_SIZE) -> Page:
        records = self.records()
        rows = [r for r in records if q.keep(r)]
        if q.sort != "instance" or q.desc:
            rows.sort(key=SORTS[q.sort], reverse=q.desc)
        pages = max(1, -(-len(rows) // page_size))
        page = min(q.page, pages)
        return Page(
            rows=rows[(page - 1) * page_size : page * page_size],
            matched=len(rows),
            total=len(records),
            page=page,
            pages=pages,
        )

    def record(self, rollout_dir: str) -> ResultRecord | None:
        self.records()
        return self._by_dir.get(rollout_dir)

    def summaries(self) -> list[ConfigSummary]:
        """The summary table per config (computed once per change of results.jsonl)."""
        self.records()
        return self._summaries

    def facets(self) -> tuple[list[str], list[str]]:
        """The configs and the statuses present, for the filter menus."""
        self.records()
        return self._facets

    def torn_note(self) -> str | None:
        if not self.torn:
            return None
        lines = ", ".join(map(str, self.torn[:5])) + (" ..." if len(self.torn) > 5 else "")
        return (
            f"{self.results}: line(s) {lines} not complete records (torn by a killed write): ignored; "
            "the next run in this folder moves them aside and redoes their rollouts"
        )


def open_folders(paths: list[str | Path]) -> list[OutputFolder]:
    """Check each argument is a readable output folder and read it once; a bad one is a one-line error."""
    folders: dict[Path, OutputFolder] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise ViewerInputError(f"{path}: no such folder")
        if not path.is_dir():
            raise ViewerInputError(
                f"{path}: not a folder (give the output folder of a run: the one holding {RESULTS_FILE})"
            )
        if not (path / RESULTS_FILE).is_file():
            raise ViewerInputError(f"{path}: not an output folder (no {RESULTS_FILE})")
        folder = OutputFolder(path)
        records = folder.records()
        if not records and folder.torn:
            raise ViewerInputError(
                f"{folder.results}: none of its {len(folder.torn)} line(s) is a results record: "
                "not a mimoagent results file"
            )
        folders.setdefault(folder.path, folder)
    return list(folders.values())
