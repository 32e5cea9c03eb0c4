"""The analytics refresh against the rollouts it reads, printed (not asserted). Run by hand:

    uv run python -m bench.bench_analytics [--sizes 1000,10000,100000] [--append 1000] [--work DIR]

For each size N: a synthetic output folder of N rollouts (testkit/output_folders.py: instances × configs
`a`, `b`, paired; about 1 in 9 a model_error and 1 in 9 a grading_error, i.e. ~22 % infrastructure errors,
the rest graded), recorded into a fresh SQLite Dagster home through the real recording path (a `cli_run`
run over a feed of the folder's records: execute_feed, as the ingestion does; its wall and CPU seconds are
the ingestion figures), then the `refresh_analytics` job (results table, every analytics asset and their
checks) run in a fresh process with nothing kept from an earlier refresh. Printed per size: the CPU of the
job's execution in that process (`time.process_time` around `execute_in_process`: the refresh alone,
Dagster's import and the definitions' load not included), the whole process's CPU (its rusage: with them),
wall seconds, and CPU per 1,000 rollouts, which is flat when the refresh is linear. Target (issue 35):
≤ 60 s CPU at 100,000 rollouts.

Then, at each size, `--append` more rollouts are appended to the same folder and recorded (a CLI run over
it), and the refresh runs twice: incremental (what the first refresh kept: analysis/cache.py) and full
(that cache deleted). Printed: both refreshes' CPU, what the incremental one parsed, and whether every
table they wrote is identical.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 60.0


def build(work: Path, n: int, start: int = 0) -> tuple[Path, float, dict[str, float]]:
    """The output folder and the Dagster home with its run recorded (`start` > 0: `n` more rollouts
    appended to the folder and recorded as another run); seconds taken, and the recording's own wall and
    CPU seconds."""
    from mimo_assets.cli_recording.execute import execute_feed
    from mimo_assets.cli_recording.feed import Feed, RecordingHeader
    from mimo_assets.instance.home import get_instance
    from mimo_core.records.results import ResultsStore
    from mimo_core.run.plan import RunRequest
    from testkit.output_folders import write_output_folder
    from testkit.tasks import write_named_config

    started = time.monotonic()
    out, home = work / "run", work / "home"
    home.mkdir(parents=True, exist_ok=True)
    write_output_folder(out, n, steps=1, long_steps=1, start=start)
    numbers = {f"inst-{i // 2:05d}" for i in range(start, start + n)}  # the rows the new rollouts are of
    records = sorted(
        (r for r in ResultsStore(out).load().values() if r.instance_id in numbers),
        key=lambda r: (r.instance_id, r.config_name),
    )
    ids = sorted({r.instance_id for r in records})
    tasks = work / "tasks.jsonl"
    tasks.write_text(
        "".join(
            json.dumps({"instance_id": i, "dataset_type": "generic", "repo_dir": ".", "problem_statement": "synthetic"})
            + "\n"
            for i in ids
        )
    )
    configs = [str(write_named_config(work, name)) for name in ("a", "b")]
    run_id = f"generated-{start}" if start else "generated"
    request = RunRequest(dataset=str(tasks), configs=configs, paired=True, output_dir=out, run_id=run_id)
    feed = Feed(
        RecordingHeader(request=request, config_names=["a", "b"], instance_ids=ids, planned=[r.key for r in records])
    )
    for record in records:
        feed.put(record)
    feed.close()
    os.environ["DAGSTER_HOME"] = str(home)
    written, cpu = time.monotonic(), time.process_time()
    error = execute_feed(feed, get_instance())  # the home's dagster.yaml, as every door opens it
    ingest = {"wall_s": time.monotonic() - written, "cpu_s": time.process_time() - cpu}
    print(
        f"  {n} rollouts written in {written - started:.0f} s, recorded in {ingest['wall_s']:.1f} s wall, "
        f"{ingest['cpu_s']:.1f} s CPU",
        flush=True,
    )
    if error:
        raise SystemExit(f"recording failed: {error}")
    return home, time.monotonic() - started, ingest


def refresh_in_this_process() -> None:
    """The `refresh_analytics` job on $DAGSTER_HOME; prints its CPU and wall seconds as JSON."""
    from mimo_assets.definitions import defs
    from mimo_assets.instance.home import get_instance

    instance = get_instance()
    job = defs.resolve_job_def("refresh_analytics")
    cpu, wall = time.process_time(), time.monotonic()
    result = job.execute_in_process(instance=instance, raise_on_error=False)
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    rollouts = None
    for event in result.all_events:
        if event.is_step_materialization and event.asset_key is not None and event.asset_key.path == ["results_table"]:
            rollouts = event.step_materialization_data.materialization.metadata["rollouts"].value
    parsed = None
    for event in result.all_events:
        if event.is_step_materialization and event.asset_key is not None and event.asset_key.path == ["results_table"]:
            parsed = event.step_materialization_data.materialization.metadata["parsed"].value
            warm = event.step_materialization_data.materialization.metadata["partition_status"].value
            parsed = {**parsed, "partition status CPU s": warm["cpu_s"]}
    out = {"success": result.success, "cpu_s": cpu, "wall_s": wall, "rollouts": rollouts, "parsed": parsed}
    print(json.dumps(out))


def refresh(home: Path, store: Path) -> dict:
    """A fresh process running the refresh; its own figures plus its rusage (CPU with imports)."""
    env = {**os.environ, "DAGSTER_HOME": str(home), "MIMOAGENT_OUTPUT_ROOT": str(store)}
    before = os.times()
    proc = subprocess.run(
        [sys.executable, "-m", "bench.bench_analytics", "--refresh-only"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=7200,
    )
    after = os.times()
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    figures["process_cpu_s"] = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return figures


def _tables(store: Path) -> dict[str, Any]:
    """Every parquet table the refresh wrote (not what it keeps for the next one)."""
    import polars as pl

    tables = store / "tables"
    return {
        str(p.relative_to(tables)): pl.read_parquet(p)
        for p in sorted(tables.rglob("*.parquet"))
        if "cache" not in p.relative_to(tables).parts
    }


def incremental(work: Path, home: Path, n: int, extra: int) -> dict[str, Any]:
    """`extra` rollouts appended to the size-`n` folder and recorded; then the refresh with what the last
    one kept, and again with nothing kept; whether their tables are identical."""
    from mimo_assets.analysis.cache import CACHE_DIR

    store = work / "store"
    _, _, ingest = build(work, extra, start=n)
    inc = refresh(home, store)
    kept = _tables(store)
    shutil.rmtree(store / "tables" / CACHE_DIR)
    full = refresh(home, store)
    now = _tables(store)
    same = kept.keys() == now.keys() and all(kept[k].equals(now[k]) for k in now)
    return {"inc": inc, "full": full, "same": same, "tables": len(now), "ingest": ingest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--append", type=int, default=1000, help="rollouts appended for the incremental refresh")
    parser.add_argument("--work", type=Path, default=None, help="keep the folders here (default: a temp dir)")
    parser.add_argument("--refresh-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.refresh_only:
        refresh_in_this_process()
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    root = args.work or Path(tempfile.mkdtemp(prefix="bench-analytics-"))
    os.environ["MIMOAGENT_DAGSTER"] = "0"
    rows = []
    for n in sizes:
        work = root / f"n{n}"
        store = work / "store"
        os.environ["MIMOAGENT_OUTPUT_ROOT"] = str(store)
        home, built, ingest = build(work, n)
        figures = refresh(home, store)
        if not figures["success"]:
            raise SystemExit(f"refresh_analytics failed at {n}")
        print(
            f"{n:>7} rollouts: refresh CPU {figures['cpu_s']:7.2f} s (process {figures['process_cpu_s']:7.2f} s), "
            f"wall {figures['wall_s']:7.2f} s, {1000 * figures['cpu_s'] / n:.3f} s CPU per 1,000 rollouts; "
            f"results table {figures['rollouts']} rows; built and recorded in {built:.0f} s",
            flush=True,
        )
        more = incremental(work, home, n, args.append) if args.append else None
        if more is not None:
            inc, full = more["inc"], more["full"]
            print(
                f"  +{args.append} rollouts appended and recorded: incremental refresh CPU {inc['cpu_s']:.2f} s "
                f"(parsed {inc['parsed']}), full refresh {full['cpu_s']:.2f} s; {more['tables']} tables "
                f"{'identical' if more['same'] else 'DIFFERENT'}",
                flush=True,
            )
        rows.append((n, figures, ingest, more))
    print("\nrollouts  refresh CPU s  per 1,000  process CPU s  wall s  ingestion wall s  CPU s  CPU per 1,000")
    for n, f, ing, _ in rows:
        print(
            f"{n:>8}  {f['cpu_s']:>13.2f}  {1000 * f['cpu_s'] / n:>9.3f}  {f['process_cpu_s']:>13.2f}  "
            f"{f['wall_s']:>6.2f}  {ing['wall_s']:>16.1f}  {ing['cpu_s']:>5.1f}  {1000 * ing['cpu_s'] / n:>13.2f}"
        )
    if args.append:
        print(f"\nafter +{args.append} rollouts   incremental CPU s  full CPU s  parsed (records, events)  identical")
        for n, _, _, more in rows:
            inc = more["inc"]
            parsed = f"{inc['parsed']['records']}, {inc['parsed']['events']}"
            print(
                f"{n:>8}                  {inc['cpu_s']:>17.2f}  {more['full']['cpu_s']:>10.2f}  "
                f"{parsed:>24}  {'yes' if more['same'] else 'NO'}"
            )
    biggest = max(rows, key=lambda r: r[0])
    verdict = "within" if biggest[1]["cpu_s"] <= TARGET_S else "OVER"
    print(f"target: <= {TARGET_S:.0f} s CPU at the largest size ({biggest[0]}): {biggest[1]['cpu_s']:.1f} s, {verdict}")
    print(f"folders under {root}")


if __name__ == "__main__":
    main()
