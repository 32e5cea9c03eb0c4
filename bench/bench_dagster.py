"""Dagster bookkeeping figures, printed (not asserted). Run by hand:

    uv run python -m bench.bench_dagster [--partitions 1000] [--register 100000] [--workers 8] [--repeat 3]
                                         [--no-postgres] [--no-ui]

1. Registering 100,000 planned partitions (`register_planned`: one storage call, only new keys) in a fresh
   SQLite instance.
2. A `--partitions` CLI run against the scripted LLM at zero latency on the local environment (one
   submit per rollout), with the Dagster observer off (the core alone) and on (the default: it leaves
   its registry entry); the ratio of the CLI's whole-tree CPU is what the CLI pays for Dagster. Then
   what Dagster pays, off the CLI's path: `mimoagent-dagster ingest` recording that run (its own
   process tree), and, with `mimoagent-dagster daemon` running, the time from the CLI's exit until its
   `cli_run` run has succeeded.
3. `dagster-webserver` on that instance after step 1 added 100,000 instances: wall time for headless
   Chromium to load and render the graded_results partitions page, beside the same page at the
   run's own size. Chromium's virtual-time budget only advances while the network is idle, so the
   wall time is the page's real load time plus a fixed start-up cost (measured on about:blank).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from mimo_assets.cli_recording.address import IDLE_ENV

REPO = Path(__file__).resolve().parents[1]


def _cli_run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds of the CLI and every process it started, the recorder included (each
    run starts its own, which exits once its run is recorded: the first run of a day, not a warm one)."""
    from bench.tree import children_of, run_tree

    ours = set(children_of(os.getpid()))  # the PostgreSQL server: not the run's, never waited for
    tree = run_tree(
        [sys.executable, "-m", "mimo_core.cli", *args],
        {**env, IDLE_ENV: "0"},
        REPO,
        keep=ours,
        timeout=3600,
        orphan_wait=120,
    )
    if tree.returncode:
        raise SystemExit(tree.stderr[-3000:])
    return tree.exited - tree.started, tree.cpu_s


def _ingest(env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of `mimoagent-dagster ingest` (a fresh process, Dagster's start included)."""
    from bench.tree import children_of, run_tree

    tree = run_tree(
        [str(Path(sys.executable).with_name("mimoagent-dagster")), "ingest"],
        env,
        REPO,
        keep=set(children_of(os.getpid())),
        timeout=3600,
        orphan_wait=5,
    )
    if tree.returncode or "recorded" not in tree.stderr:
        raise SystemExit(f"ingest failed:\n{tree.stderr[-3000:]}")
    return tree.exited - tree.started, tree.cpu_s


def bookkeeping(
    work: Path,
    n: int,
    workers: int,
    home: Path,
    env_extra: dict[str, str] | None = None,
) -> tuple[tuple[float, float], tuple[float, float], tuple[float, float]]:
    """(wall, CPU) of the same run with the Dagster observer off, then on (the default: it leaves its entry),
    then of recording that run (`mimoagent-dagster ingest`)."""
    from testkit.scripted_llm import ScriptedLLM, call, turns
    from testkit.tasks import write_named_config, write_tasks

    work.mkdir(parents=True, exist_ok=True)
    data = write_tasks(work, n)
    cfg = write_named_config(work, "bench")
    with ScriptedLLM(turns(call("submit"))) as server:
        env = {
            **os.environ,
            "MIMO_TEST_BASE_URL": server.openai_base_url,
            "MIMO_TEST_API_KEY": "k",
            "DAGSTER_HOME": str(home),
            "MIMOAGENT_OUTPUT_ROOT": str(work / "store"),
            "MIMOAGENT_DAGSTER_WAIT": "all",
            **(env_extra or {}),
        }
        env.pop("MIMOAGENT_OBSERVERS", None)
        base = ["-c", str(cfg), "--dataset", str(data), "--workers", str(workers)]
        core = _cli_run([*base, "-o", str(work / "core")], {**env, "MIMOAGENT_DAGSTER": "0"})
        with_dagster = _cli_run([*base, "-o", str(work / "dagster")], env)
        recording = _ingest(env)
    return core, with_dagster, recording


def _print_share(
    storage: str,
    args: argparse.Namespace,
    runs: list[tuple[tuple[float, float], tuple[float, float], tuple[float, float]]],
) -> None:
    """Medians over the triples (off, on, recording), each run back to back: a single 8-worker zero-latency
    run's wall and CPU move by ±10 % between runs."""
    from statistics import median

    def ratio(i: int) -> list[float]:
        return [on[i] / off[i] for off, on, _ in runs]

    wall0, cpu0 = median(p[0][0] for p in runs), median(p[0][1] for p in runs)
    wall1, cpu1 = median(p[1][0] for p in runs), median(p[1][1] for p in runs)
    wall2, cpu2 = median(p[2][0] for p in runs), median(p[2][1] for p in runs)
    print(
        f"{args.partitions:,}-partition CLI run, zero-latency model, {args.workers} workers, {storage}, "
        f"{len(runs)} rounds: recording off {wall0:.1f} s wall / {cpu0:.1f} s CPU, default {wall1:.1f} s / "
        f"{cpu1:.1f} s (medians): the CLI's tree at {median(ratio(0)):.2f}x wall "
        f"({', '.join(f'{x:.2f}' for x in ratio(0))}), {median(ratio(1)):.2f}x CPU "
        f"({', '.join(f'{x:.2f}' for x in ratio(1))}); Dagster recording it afterwards "
        f"(`mimoagent-dagster ingest`): {wall2:.1f} s wall / {cpu2:.1f} s CPU "
        f"(load average {os.getloadavg()[0]:.1f})"
    )


def daemon_delay(work: Path, home: Path, n: int = 3) -> list[float]:
    """Seconds from a small CLI run's exit until its `cli_run` run has succeeded, with the daemon running."""
    from dagster import DagsterRunStatus

    from mimo_assets.instance.home import get_instance
    from testkit.scripted_llm import ScriptedLLM, call, turns
    from testkit.tasks import write_named_config, write_tasks

    work.mkdir(parents=True, exist_ok=True)
    data, cfg = write_tasks(work, 2), write_named_config(work, "bench")
    env = {**os.environ, "DAGSTER_HOME": str(home), "MIMOAGENT_OUTPUT_ROOT": str(work / "store")}
    env.pop("MIMOAGENT_OBSERVERS", None)
    os.environ["DAGSTER_HOME"] = str(home)  # this process watches the daemon's instance
    get_instance().dispose()
    log = open(work / "daemon.log", "w")  # noqa: SIM115 - open while the daemon runs
    daemon = subprocess.Popen(
        [str(Path(sys.executable).with_name("mimoagent-dagster")), "daemon"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    delays = []
    try:
        with ScriptedLLM(turns(call("submit"))) as server, get_instance() as instance:
            env.update(MIMO_TEST_BASE_URL=server.openai_base_url, MIMO_TEST_API_KEY="k")
            for i in range(n):
                before = {r.run_id for r in instance.get_runs()}
                _cli_run(["-c", str(cfg), "--dataset", str(data), "-o", str(work / f"out{i}")], env)
                ended = time.monotonic()
                while time.monotonic() - ended < 600:
                    new = [r for r in instance.get_runs() if r.run_id not in before and r.job_name == "cli_run"]
                    if new and new[0].status == DagsterRunStatus.SUCCESS:
                        delays.append(time.monotonic() - ended)
                        break
                    time.sleep(0.2)
                else:
                    raise SystemExit(f"the daemon did not record run {i} within 600 s (log: {work / 'daemon.log'})")
    finally:
        os.killpg(daemon.pid, signal.SIGKILL)
        daemon.wait()
        log.close()
    return delays


def demo_wait(out: Path, home: Path, wait: str | None = None) -> float:
    """Live recording (opt-in): seconds the demo CLI waited after its last rollout, as its observer logged
    them (`wait`: the MIMOAGENT_DAGSTER_WAIT to run with; `all` gives the time until everything is recorded)."""
    from mimo_assets.cli_recording.live import WAIT_LINE
    from mimo_assets.cli_recording.observer import LOG_FILE

    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "MIMOAGENT_OUTPUT_ROOT": str(out / "store"),
        "MIMOAGENT_DAGSTER_LIVE": "1",
    }
    env.pop("MIMOAGENT_DAGSTER_WAIT", None)
    if wait is not None:
        env["MIMOAGENT_DAGSTER_WAIT"] = wait
    _cli_run(
        ["-c", "configs/demo.yaml", "--dataset", "examples/demo.jsonl", "--recalc-input", "gt", "-o", str(out)], env
    )
    line = next(ln for ln in (out / LOG_FILE).read_text().splitlines() if ln.startswith(WAIT_LINE))
    return float(line.removeprefix(WAIT_LINE).split()[0])


def register_partitions(count: int, home: Path) -> float:
    from dagster import DagsterInstance

    from mimo_assets.partitions import register_planned

    with DagsterInstance.from_config(str(home)) as instance:
        ids = [f"bench-instance-{i:06d}" for i in range(count)]
        t0 = time.perf_counter()
        register_planned(instance, "bench", [(i, "bench") for i in ids])
        return time.perf_counter() - t0


def _chromium_seconds(url: str) -> tuple[float, str]:
    from testkit import chromium

    t0 = time.perf_counter()
    html = chromium.dump_dom(url, budget_ms=5000, timeout=600)
    return time.perf_counter() - t0, chromium.visible_text(html)


def ui_load(home: Path) -> dict[str, float | str]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).with_name("dagster-webserver")
    proc = subprocess.Popen(
        [str(exe), "-h", "127.0.0.1", "-p", str(port), "-w", "workspace.yaml"],
        cwd=REPO,
        env={**os.environ, "DAGSTER_HOME": str(home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/server_info", timeout=2).read()
                break
            except OSError:
                time.sleep(0.3)
        req = urllib.request.Request(
            url + "/graphql", data=b'{"query": "mutation { setNuxSeen }"}', headers={"Content-Type": "application/json"}
        )
        urllib.request.urlopen(req, timeout=10).read()
        blank, _ = _chromium_seconds("about:blank")
        _chromium_seconds(url + "/assets/graded_results?view=partitions")  # warm the server's caches
        page, text = _chromium_seconds(url + "/assets/graded_results?view=partitions")
        graph, _ = _chromium_seconds(url + "/locations/mimoagent/asset-groups/rollouts")
        found = re.search(r"([\d,]+) Partitions", text)
        shown = found.group(1) if found else "?"
        return {"blank": blank, "page": page, "graph": graph, "partitions_shown": shown}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--register", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--no-postgres", action="store_true", help="skip the PostgreSQL figure")
    ap.add_argument("--repeat", type=int, default=3, help="off/on pairs per storage (medians printed)")
    ap.add_argument("--no-ui", action="store_true", help="skip the webserver figures")
    args = ap.parse_args()
    from mimo_assets.instance.home import dagster_home

    # Time what a user's machine does: byte-code cached (a sandbox may set PYTHONDONTWRITEBYTECODE, which
    # makes every process compile Dagster's ~1,300 modules from source).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.setdefault("PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "mimo-bench-pycache"))

    with tempfile.TemporaryDirectory(prefix="bench-dagster-") as tmp:
        work = Path(tmp)
        fresh = work / "fresh_home"
        os.environ["DAGSTER_HOME"] = str(fresh)
        dagster_home()
        seconds = register_partitions(args.register, fresh)
        print(
            f"register {args.register:,} planned partitions: {seconds:.2f} s "
            f"({seconds / args.register * 1e6:.1f} µs each)"
        )

        warm = work / "warm_home"
        os.environ["DAGSTER_HOME"] = str(warm)
        dagster_home()
        bookkeeping(work / "warm", 5, 2, warm)  # fills the byte-code cache for both processes

        home = work / "run_home"
        os.environ["DAGSTER_HOME"] = str(home)
        dagster_home()
        _print_share(
            "SQLite",
            args,
            [bookkeeping(work / f"sqlite{i}", args.partitions, args.workers, home) for i in range(args.repeat)],
        )
        if not args.no_postgres:
            from testkit.postgres import postgres_server

            with postgres_server(durable=True) as server:
                url = server.create_database("bench").replace("postgresql://", "postgresql+psycopg2://")
                pg_env = {"MIMOAGENT_DAGSTER_POSTGRES_URL": url}
                pg_home = work / "pg_home"
                bookkeeping(work / "pg_warm", 5, 2, pg_home, pg_env)  # creates the schema
                _print_share(
                    "PostgreSQL",
                    args,
                    [
                        bookkeeping(work / f"pg{i}", args.partitions, args.workers, pg_home, pg_env)
                        for i in range(args.repeat)
                    ],
                )
        delays = daemon_delay(work / "daemon", work / "daemon_home")
        print(
            f"with `mimoagent-dagster daemon` running: a 2-rollout CLI run's cli_run run succeeded "
            f"{', '.join(f'{d:.1f}' for d in delays)} s after the CLI exited (target ≤ 30 s; load average "
            f"{os.getloadavg()[0]:.1f})"
        )
        waits = [demo_wait(work / f"demo{i}", home) for i in range(3)]
        print(
            f"live recording (MIMOAGENT_DAGSTER_LIVE=1), README demo (8 rows, --recalc-input gt), default "
            f"MIMOAGENT_DAGSTER_WAIT: CLI waited "
            f"{', '.join(f'{w:.2f}' for w in waits)} s for Dagster after its last rollout"
        )
        full = [demo_wait(work / f"demo-all{i}", home, wait="all") for i in range(3)]
        print(
            f"the same with MIMOAGENT_DAGSTER_WAIT=all: everything recorded {', '.join(f'{w:.2f}' for w in full)} s "
            "after the last rollout"
        )

        if args.no_ui:
            return
        small = ui_load(home)
        register_partitions(args.register, home)
        big = ui_load(home)
        print(
            f"UI graded_results partitions page (chromium wall time, about:blank = {big['blank']:.2f} s): "
            f"{small['page']:.2f} s at {small['partitions_shown']} partitions, {big['page']:.2f} s at "
            f"{big['partitions_shown']} ({args.register:,} more planned cells); "
            f"asset graph {small['graph']:.2f} s -> {big['graph']:.2f} s"
        )


if __name__ == "__main__":
    main()
