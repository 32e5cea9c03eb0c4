"""The `rollouts` asset's partitions page in a real browser at 100,000 partitions, printed (not asserted).
Run by hand from the repository root:

    uv run python -m bench.bench_dagster_ui [--instances 50000] [--configs a,b] [--work DIR]

A fresh SQLite Dagster home (the `dagster.yaml` a new mimoagent home gets) is filled with synthetic runs
straight through the Dagster API, without running a rollout: the planned cells (`configs` × `instances`,
2 × 50,000 = 100,000 dynamic partitions) registered as a CLI run registers them, then, in one Dagster run
that ends failed as a CLI run with infrastructure errors does, the events our recording step logs
(mimo_assets.eventlog.events): `rollouts` and `graded_results` materializations for the materialized cells,
"materialization planned" events and `failed` observations for the failed ones (1 in `--fail-every`),
nothing for the missing ones (1 in `--missing-every`), stored in batches of a few thousand events.

Then `dagster-webserver` on that home and headless Chromium (Debian's `chromium`, driven over DevTools:
testkit/cdp.py) open `/assets/rollouts?view=partitions`. Printed: the time from asking for the page until
its partition status bar shows its counts (Materialized, Failed, Missing: the first load, when Dagster
builds the asset's partition status cache, then warm loads), the counts shown against those written, and
the webserver's resident memory (its own process and the code server it starts) after the loads.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATASET = "synthetic-ui"
JOB = "synthetic_cli_run"
STEP = "record_cli_run"
COUNTS = re.compile(r"(Materialized|Failed|Missing) \(([\d,]+)\)")
TOTAL = re.compile(r"([\d,]+) Partitions")


@dataclass
class Written:
    planned: int
    materialized: int
    failed: int
    missing: int
    seconds: float

    def expected(self) -> dict[str, int]:
        return {
            "Partitions": self.planned,
            "Materialized": self.materialized,
            "Failed": self.failed,
            "Missing": self.missing,
        }


def _entry(run_id: str, event_type: Any, data: Any, message: str = "") -> Any:
    from dagster import DagsterEvent, EventLogEntry

    event = DagsterEvent(event_type.value, JOB, event_specific_data=data, message=message, step_key=STEP)
    return EventLogEntry(None, "INFO", message, run_id, time.time(), step_key=STEP, job_name=JOB, dagster_event=event)


def plan_cells(
    instances: int, configs: Sequence[str], fail_every: int, missing_every: int
) -> list[tuple[str, str, str]]:
    """(instance, config, what it is) of each planned cell, in registration order: cell n is `missing` when
    n % missing_every == missing_every - 1, else `failed` when n % fail_every == 0, else `materialized`."""
    cells = [(f"inst-{i:06d}", c) for c in configs for i in range(instances)]
    kinds = ["failed" if n % fail_every == 0 else "materialized" for n in range(len(cells))]
    for n in range(missing_every - 1, len(cells), missing_every):
        kinds[n] = "missing"
    return [(i, c, kind) for (i, c), kind in zip(cells, kinds, strict=True)]


def expected_counts(cells: list[tuple[str, str, str]], seconds: float = 0.0) -> Written:
    kinds = [kind for _, _, kind in cells]
    return Written(len(cells), kinds.count("materialized"), kinds.count("failed"), kinds.count("missing"), seconds)


def write_synthetic(
    instance: Any,
    instances: int,
    configs: Sequence[str] = ("a", "b"),
    fail_every: int = 9,
    missing_every: int = 25,
    run_dir: Path = Path("/tmp/synthetic-ui-run"),
    batch: int = 4000,
) -> Written:
    """Planned cells `configs` × `instances` and one failed Dagster run holding the events our recording
    logs for them (see the module's docstring), each cell as plan_cells says."""
    from dagster import DagsterEventType, job, op
    from dagster._core.events import AssetMaterializationPlannedData, AssetObservationData, StepMaterializationData

    from mimo_assets.asset_keys import GRADED_RESULTS, ROLLOUTS
    from mimo_assets.eventlog.events import Upstream, partition_events, partition_failures, run_tags
    from mimo_assets.partitions import register_planned
    from mimo_core.records.results import ResultRecord
    from mimo_core.status import ExitStatus

    @op(name=STEP)
    def step() -> None:
        pass

    @job(name=JOB)
    def synthetic() -> None:
        step()

    started = time.monotonic()
    cells = plan_cells(instances, configs, fail_every, missing_every)
    register_planned(instance, DATASET, [(i, c) for i, c, _ in cells])
    run = instance.create_run_for_job(synthetic, tags={"mimoagent/source": "cli", "mimoagent/run_id": "synthetic"})
    tags = run_tags({"mimoagent/source": "cli"})
    pending: list[Any] = []

    def flush() -> None:
        if pending:
            instance.event_log_storage.store_event_batch(list(pending))
            pending.clear()

    for n, (instance_id, config, kind) in enumerate(cells):
        if kind == "missing":
            continue
        failed = kind == "failed"
        record = ResultRecord(
            run_id="synthetic",
            instance_id=instance_id,
            config_name=config,
            exit_status=ExitStatus.MODEL_ERROR if failed else ExitStatus.SUBMITTED,
            error="model_error: synthetic" if failed else None,
            reward=None if failed else float(n % 2),
            passed=None if failed else n % 2 == 1,
            steps=3,
            output_dir=f"{instance_id}/{config}/0",
        )
        if failed:
            for key in (ROLLOUTS, GRADED_RESULTS):
                planned = AssetMaterializationPlannedData(key, partition=f"{config}|{DATASET}/{instance_id}")
                pending.append(_entry(run.run_id, DagsterEventType.ASSET_MATERIALIZATION_PLANNED, planned))
            for event in partition_failures(DATASET, [record], tags, run_dir=run_dir):
                if not hasattr(event, "failure_type"):  # the observations (the failure events are not stored)
                    data = AssetObservationData(event)
                    pending.append(_entry(run.run_id, DagsterEventType.ASSET_OBSERVATION, data))
        else:
            for event in partition_events(DATASET, [record], run_dir, Upstream(), tags):
                data = StepMaterializationData(event)
                pending.append(_entry(run.run_id, DagsterEventType.ASSET_MATERIALIZATION, data, "Materialized"))
        if len(pending) >= batch:
            flush()
    flush()
    instance.report_run_failed(run, message="synthetic: its failed partitions hit infrastructure errors")
    return expected_counts(cells, time.monotonic() - started)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def webserver(home: Path, log: Path, env: dict[str, str] | None = None) -> Iterator[tuple[str, int]]:
    """`dagster-webserver` on `home` in its own process group, stopped by that group (never by name):
    its URL and pid."""
    from testkit.processes import stop_group

    port = _free_port()
    exe = Path(sys.executable).with_name("dagster-webserver")
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [str(exe), "-h", "127.0.0.1", "-p", str(port), "-w", "workspace.yaml"],
            cwd=REPO,
            env={**os.environ, **(env or {}), "DAGSTER_HOME": str(home)},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(url + "/server_info", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"dagster-webserver did not start: {log}") from None
                time.sleep(0.3)
        req = urllib.request.Request(
            url + "/graphql", data=b'{"query": "mutation { setNuxSeen }"}', headers={"Content-Type": "application/json"}
        )
        urllib.request.urlopen(req, timeout=30).read()  # no first-visit modal over the page
        yield url, proc.pid
    finally:
        stop_group(proc)


def shown_counts(browser: Any, url: str, timeout: float = 120) -> tuple[float, dict[str, int]]:
    """Open `url` and wait until its partition status bar shows all three counts (and the partitions
    above it): seconds from asking for the page (the server's work included), and the counts."""
    started = time.monotonic()
    browser.send("Page.navigate", url=url)
    while True:
        text = browser.evaluate("document.body ? document.body.innerText : ''") or ""
        found = {name: int(value.replace(",", "")) for name, value in COUNTS.findall(text)}
        total = TOTAL.search(text)
        if len(found) == 3 and total:
            found["Partitions"] = int(total.group(1).replace(",", ""))
            return time.monotonic() - started, found
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"no partition counts after {timeout:.0f} s: {text[:1500]}")
        time.sleep(0.05)


def _status(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) // 1024  # MB
    return fields


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        out += [int(c) for c in text]
    return out + [g for c in out for g in _children(c)]


def memory(pid: int) -> dict[str, Any]:
    """The webserver's resident memory (MB): its own now and at its peak, and its children's (the code
    server it starts for the workspace) now."""
    own = _status(pid)
    kids = {}
    for child in _children(pid):
        try:
            cmd = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:80]
            kids[child] = (cmd, _status(child).get("VmRSS", 0))
        except OSError:
            continue
    return {"rss": own.get("VmRSS", 0), "peak": own.get("VmHWM", 0), "children": kids}


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU the processes have used (all their threads)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def measure(url: str, pid: int, asset: str = "rollouts", warm: int = 3) -> dict[str, Any]:
    """The partitions page of `asset`: the first load, then `warm` more, each with the webserver's CPU
    (and its code server's) during it; the counts of the last; memory."""
    from testkit.cdp import Browser

    page = f"{url}/assets/{asset}?view=partitions"
    loads: list[tuple[float, float]] = []
    with Browser() as browser:
        t0 = time.monotonic()
        browser.load("about:blank")
        blank = time.monotonic() - t0
        for _ in range(1 + warm):
            browser.load("about:blank")
            pids = [pid, *_children(pid)]
            before = cpu_seconds(pids)
            seconds, counts = shown_counts(browser, page)
            time.sleep(0.5)  # the page's last queries end after its counts show
            loads.append((seconds, cpu_seconds(pids) - before))
        shot = browser.screenshot(Path(tempfile.gettempdir()) / f"bench-dagster-ui-{asset}.png")
    return {"blank": blank, "loads": loads, "counts": counts, "memory": memory(pid), "shot": shot}


def _machine() -> str:
    model = next(
        (ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines() if "model name" in ln),
        platform.processor(),
    )
    mem = int(next(ln for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal")).split()[1])
    return f"{os.cpu_count()} cores ({model}), {mem // 1024 // 1024} GB RAM, load {os.getloadavg()[0]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=50_000)
    parser.add_argument("--configs", default="a,b")
    parser.add_argument("--fail-every", type=int, default=9)
    parser.add_argument("--missing-every", type=int, default=25)
    parser.add_argument("--warm", type=int, default=3, help="loads after the first")
    parser.add_argument("--work", type=Path, default=None, help="keep the home here (default: a temp dir)")
    parser.add_argument("--no-write", action="store_true", help="measure the home --work holds (same arguments)")
    args = parser.parse_args()
    from mimo_assets.instance.home import get_instance

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-dagster-ui-"))
    home = work / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    os.environ["DAGSTER_HOME"] = str(home)
    os.environ.setdefault("MIMOAGENT_OUTPUT_ROOT", str(work / "store"))
    print(f"{time.strftime('%Y-%m-%d %H:%M %Z')}; {_machine()}", flush=True)
    configs = args.configs.split(",")
    if args.no_write:
        written = expected_counts(plan_cells(args.instances, configs, args.fail_every, args.missing_every))
    else:
        written = write_synthetic(get_instance(), args.instances, configs, args.fail_every, args.missing_every)
        print(
            f"written: {written.planned:,} planned partitions ({written.materialized:,} materialized, "
            f"{written.failed:,} failed, {written.missing:,} missing) in {written.seconds:.1f} s",
            flush=True,
        )
    with webserver(home, work / "webserver.log") as (url, pid):
        start_mem = memory(pid)
        got = measure(url, pid, warm=args.warm)
    counts, expected = got["counts"], written.expected()
    verdict = "correct" if counts == expected else f"WRONG (written {expected})"
    mem = got["memory"]
    kids = "; ".join(f"{cmd.strip()}: {rss} MB" for cmd, rss in mem["children"].values()) or "none"
    (first, first_cpu), *warm = got["loads"]
    print(f"about:blank in the browser: {got['blank']:.2f} s")
    print(
        f"rollouts partitions page, until its status bar shows its counts: first load {first:.2f} s (webserver "
        f"CPU {first_cpu:.2f} s{'' if args.no_write else '; the asset partition status cache built'}), then "
        + ", ".join(f"{s:.2f} s (CPU {c:.2f} s)" for s, c in warm)
        + (f"; median {statistics.median(s for s, _ in warm):.2f} s" if warm else "")
    )
    print(f"status bar shows {counts}: {verdict}")
    print(
        f"webserver RSS: {start_mem['rss']} MB at start, {mem['rss']} MB after the loads (peak {mem['peak']} MB); "
        f"its children: {kids}; load average {os.getloadavg()[0]:.1f}"
    )
    print(f"screenshot: {got['shot']}; home under {work}")


if __name__ == "__main__":
    main()
