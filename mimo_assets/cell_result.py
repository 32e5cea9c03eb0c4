"""The result of a cell (a `config|dataset/instance` partition): one rule, followed both by the events that
set a partition's status in the UI and by the results table the analytics read (docs/dagster.md#the-result-of-a-cell).

A cell's result is its graded rollouts (records without an infrastructure error) in the run folder its
latest `graded_results` materialization names. An infrastructure error is never a result, so one that
comes after a graded result does not unseat it: the run that hit it is red and names the cells that kept
their result, but logs no failure for them. Only a cell with no result (never graded, or its folder no
longer holds graded records for it: `--redo-existing` over the same folder replaced them) is failed.

Import-light (no polars): the recording steps use it too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from dagster import AssetKey, AssetMaterialization, AssetRecordsFilter, DagsterEventType, DagsterInstance

from mimo_assets.asset_keys import GRADED_RESULTS
from mimo_assets.results_tail import ReadPoint, read_tail
from mimo_core.records.results import ResultRecord
from mimo_core.run.job import GT

# The kinds of run a record comes from; tables never pool two of them.
RUN_KINDS = {
    "rollout": "an agent (ours or a CLI agent) worked on the task",
    "oracle": "the oracle agent applied the reference solution",
    "gold": "a recalc graded the reference solution (--recalc-input gt)",
    "regrade": "a recalc graded the submissions an earlier run saved (--recalc-input DIR, a graded_results backfill)",
}


def run_kind(record: ResultRecord) -> str:
    if record.recalc == GT:
        return "gold"
    if record.recalc:
        return "regrade"
    return "oracle" if record.agent_type == "oracle" else "rollout"


def source_of(recalc: str | None) -> str:
    """What produced a graded result, as far as its materialization says (its `recalc`): `gold`, `regrade`,
    or `agent` (a rollout or the oracle: the config decides which). The results table keeps each source's
    latest result of a cell apart, so a gold recalc never replaces a model's result in the tables."""
    if recalc == GT:
        return "gold"
    return "regrade" if recalc else "agent"


class FolderIndex:
    """A run folder's records (ResultsStore.load()) grouped by cell once, so looking up every cell of a
    folder costs one pass over its records, not one pass per cell (a refresh of 100,000 rollouts).
    `refresh` brings it up to date with its folder, parsing only what was appended since (results_tail)."""

    def __init__(self, records: Mapping[tuple[str, str, int], ResultRecord], run_dir: Path | None = None):
        self.run_dir = run_dir
        self.cells: dict[tuple[str, str], list[ResultRecord]] = {}
        self._complete: dict[tuple[str, str], dict[int, ResultRecord]] = {}  # the file's complete lines
        self._pending: list[ResultRecord] = []  # records after its last newline: counted, read again
        self._point: ReadPoint | None = None
        self._apply(records.values(), [])

    @classmethod
    def of(cls, run_dir: Path) -> FolderIndex:
        return cls({}, run_dir).refresh()

    def refresh(self) -> FolderIndex:
        """Read what the folder's results.jsonl gained since the last read (all of it when the file was
        replaced or rewritten): the index then holds exactly what `ResultsStore(run_dir).load()` gives."""
        if self.run_dir is None:
            raise ValueError("an index built from records has no folder to read")
        read = read_tail(self.run_dir, self._point)
        if read.whole:
            self._complete.clear()
            self.cells.clear()
        self._point = read.point
        self._apply(read.records, read.unterminated)
        return self

    def _apply(self, records: Iterable[ResultRecord], pending: list[ResultRecord]) -> None:
        """Records of complete lines in file order (the last of a key wins), then the new pending ones."""
        touched = {(r.instance_id, r.config_name) for r in self._pending}
        for r in records:
            cell = (r.instance_id, r.config_name)
            self._complete.setdefault(cell, {})[r.rollout_index] = r
            touched.add(cell)
        self._pending = pending
        overlay: dict[tuple[str, str], dict[int, ResultRecord]] = {}
        for r in pending:
            overlay.setdefault((r.instance_id, r.config_name), {})[r.rollout_index] = r
        for cell in touched | overlay.keys():
            group = {**self._complete.get(cell, {}), **overlay.get(cell, {})}
            if group:
                self.cells[cell] = [group[k] for k in sorted(group)]
            else:
                self.cells.pop(cell, None)

    def graded(self, instance_id: str, config_name: str, source: str | None = None) -> list[ResultRecord]:
        """The cell's graded rollouts (no infrastructure error), by rollout index; with `source`, only those
        of that source (source_of)."""
        return [
            r
            for r in self.cells.get((instance_id, config_name), ())
            if not r.infra_error and (source is None or source_of(r.recalc) == source)
        ]

    def infra_errors(self, instance_id: str, config_name: str, source: str | None = None) -> list[ResultRecord]:
        """The cell's rollouts that hit an infrastructure error (never a result, but they ran and cost)."""
        return [
            r
            for r in self.cells.get((instance_id, config_name), ())
            if r.infra_error and (source is None or source_of(r.recalc) == source)
        ]


def graded_records(
    records: Mapping[tuple[str, str, int], ResultRecord],
    instance_id: str,
    config_name: str,
    source: str | None = None,
) -> list[ResultRecord]:
    """The cell's graded rollouts among a run folder's records (ResultsStore.load()), by rollout index;
    with `source`, only those of that source (source_of). One cell: for many, index the folder once
    (FolderIndex)."""
    return FolderIndex({k: r for k, r in records.items() if k[0] == instance_id and k[1] == config_name}).graded(
        instance_id, config_name, source
    )


@dataclass
class CellResult:
    """A cell's current result: its latest graded materialization and the graded records it names."""

    materialization: AssetMaterialization
    run_dir: Path
    records: list[ResultRecord]


class CurrentResults:
    """Looks up cells' current results, reading each run folder once; a folder being written (`live`, the
    running step's own) is brought up to date each time, parsing only what was appended since (one pass
    over the run's records in all, not one per cell asked about)."""

    def __init__(self, instance: DagsterInstance, live: Path | None = None):
        self.instance = instance
        self.live = live.resolve() if live is not None else None
        self._folders: dict[Path, FolderIndex] = {}
        self._asked: set[str] = set()  # partitions `prefetch` looked up
        self._graded: set[str] = set()  # those of them with a graded materialization

    def prefetch(self, partitions: Iterable[str]) -> None:
        """Which of these partitions have a graded materialization at all, in one query: `of` then reads
        the latest materialization only of those that have one (a first run's failures have none)."""
        asked = set(partitions)
        found = self.instance.event_log_storage.get_latest_storage_id_by_partition(
            GRADED_RESULTS, DagsterEventType.ASSET_MATERIALIZATION, asked
        )
        self._asked, self._graded = asked, set(found)

    def of(self, partition: str, instance_id: str, config_name: str) -> CellResult | None:
        if partition in self._asked and partition not in self._graded:
            return None
        mat = latest_materialization(self.instance, GRADED_RESULTS, partition)
        if mat is None or "output_dir" not in mat.metadata:
            return None
        run_dir = Path(str(mat.metadata["output_dir"].value))
        folder = self._folders.get(run_dir)
        if folder is None:
            folder = self._folders[run_dir] = FolderIndex.of(run_dir)
        elif run_dir.resolve() == self.live:
            folder.refresh()
        records = folder.graded(instance_id, config_name)
        return CellResult(mat, run_dir, records) if records else None


def latest_materialization(instance: DagsterInstance, key: AssetKey, partition: str) -> AssetMaterialization | None:
    result = instance.fetch_materializations(AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1)
    return result.records[0].asset_materialization if result.records else None
