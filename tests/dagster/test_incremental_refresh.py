"""A refresh of the analytics after a run reads what changed (analysis/cache.py) and gives exactly the
tables a refresh that reads everything gives: after rollouts appended to a run folder and recorded, after
its results.jsonl is rewritten (a key written again: the folder is read whole again), and after a
recorded run is deleted (its events gone: the events are read whole again)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from dagster import DagsterInstance

from mimo_assets.cli_recording.execute import execute_feed
from mimo_assets.cli_recording.feed import Feed, RecordingHeader
from mimo_assets.definitions import defs
from mimo_assets.instance.home import get_instance
from mimo_core.records.results import RESULTS_FILE, ResultRecord, ResultsStore
from mimo_core.run.plan import RunRequest
from mimo_core.status import ExitStatus
from testkit.output_folders import write_output_folder
from testkit.tasks import write_named_config


def _record(instance: DagsterInstance, work: Path, out: Path, records: list[ResultRecord], run_id: str) -> None:
    """Record `records` of the folder `out` as a CLI run (what the ingestion does with a registry entry)."""
    ids = sorted({r.instance_id for r in records})
    tasks = work / "tasks.jsonl"
    rows = [{"instance_id": f"inst-{i:05d}", "dataset_type": "generic", "problem_statement": "s"} for i in range(60)]
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    configs = [str(write_named_config(work, name)) for name in ("a", "b")]
    request = RunRequest(dataset=str(tasks), configs=configs, paired=True, output_dir=out, run_id=run_id)
    header = RecordingHeader(
        request=request, config_names=["a", "b"], instance_ids=ids, planned=[r.key for r in records]
    )
    feed = Feed(header)
    for record in records:
        feed.put(record)
    feed.close()
    assert execute_feed(feed, instance) is None


def _refresh(instance: DagsterInstance, root: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """`refresh_analytics` with its tables under `root`: every table it wrote, and what it parsed."""
    monkeypatch.setenv("MIMOAGENT_OUTPUT_ROOT", str(root))
    result = defs.resolve_job_def("refresh_analytics").execute_in_process(instance=instance)
    assert result.success
    mats = [m for m in result.get_asset_materialization_events() if m.asset_key.path == ["results_table"]]
    parsed = dict(mats[0].step_materialization_data.materialization.metadata["parsed"].value)
    (check,) = [c for c in result.get_asset_check_evaluations() if c.check_name == "trajectories_validate"]
    parsed["trajectories"] = check.metadata["read"].value
    tables = root / "tables"
    found = {
        str(p.relative_to(tables)): pl.read_parquet(p)
        for p in sorted(tables.rglob("*.parquet"))
        if "cache" not in p.relative_to(tables).parts
    }
    return {"parsed": parsed, "tables": found}


def _same_as_a_full_refresh(instance: DagsterInstance, work: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """An incremental refresh (the kept cache under work/inc) and one with nothing kept (a new root): the
    same tables. Returns what the incremental one parsed."""
    inc = _refresh(instance, work / "inc", monkeypatch)
    full_root = work / "full"
    shutil.rmtree(full_root, ignore_errors=True)
    full = _refresh(instance, full_root, monkeypatch)
    assert inc["tables"].keys() == full["tables"].keys() and len(inc["tables"]) >= 8, inc["tables"].keys()
    for name, table in full["tables"].items():
        assert inc["tables"][name].equals(table), (name, inc["tables"][name], table)
    assert inc["tables"]["results_table.parquet"].height > 0
    return inc["parsed"]


def test_an_incremental_refresh_gives_the_tables_a_full_one_gives(
    tmp_path: Path, dagster_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch, out = tmp_path / "scratch", tmp_path / "run"
    write_output_folder(scratch, 100, steps=1, long_steps=1)  # 50 instances × a, b; ~22 % infrastructure errors
    lines = (scratch / RESULTS_FILE).read_text().splitlines(keepends=True)
    shutil.copytree(scratch, out)
    (out / RESULTS_FILE).write_text("".join(lines[:80]))
    instance = get_instance()
    _record(instance, tmp_path, out, list(ResultsStore(out).load().values()), "first")

    parsed = _same_as_a_full_refresh(instance, tmp_path, monkeypatch)
    assert parsed["records"] == 80 and parsed["events"] > 0  # nothing kept yet: all of it

    with open(out / RESULTS_FILE, "a") as fh:  # 20 more rollouts of the same folder, then recorded
        fh.write("".join(lines[80:]))
    appended = [ResultRecord.model_validate_json(line) for line in lines[80:]]
    _record(instance, tmp_path, out, appended, "second")
    graded_new = sum(1 for r in appended if not r.infra_error)
    failed_new = len({(r.instance_id, r.config_name) for r in appended if r.infra_error})
    parsed = _same_as_a_full_refresh(instance, tmp_path, monkeypatch)
    assert parsed["records"] == 20 and parsed["events"] == graded_new + failed_new, parsed  # only what changed
    assert parsed["trajectories"] == graded_new

    first = ResultsStore(out).load()[("inst-00003", "a", 0)]  # a key written again: the file is rewritten
    flipped = first.model_copy(update={"exit_status": ExitStatus.SUBMITTED, "reward": 1.0 - (first.reward or 0.0)})
    ResultsStore(out).put(flipped)
    parsed = _same_as_a_full_refresh(instance, tmp_path, monkeypatch)
    assert parsed["records"] == 100 and parsed["events"] == 0, parsed  # read whole again

    (second,) = [r for r in instance.get_runs() if r.tags.get("mimoagent/run_id") == "second"]
    instance.delete_run(second.run_id)  # its events are gone: read them all again
    parsed = _same_as_a_full_refresh(instance, tmp_path, monkeypatch)
    assert parsed["events"] > graded_new + failed_new and parsed["records"] == 0, parsed
