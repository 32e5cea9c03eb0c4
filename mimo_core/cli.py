"""`mimoagent`: run rollouts from a shell. Imports stay light so `--help` and start-up are fast."""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path
from typing import Any, NoReturn

from mimo_core.disk import DiskFull
from mimo_core.errors import MimoError

EXIT_BAD_INPUT = 2
EXIT_ALL_INFRA = 3  # every rollout this run ran ended in an infrastructure error (nothing was graded)
EXIT_DISK_FULL = 4  # the disk filled up mid-run: stopped, finished rollouts kept


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line and exit code 2, not a usage dump."""
        print(f"mimoagent: error: {message} (see mimoagent --help)", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mimoagent",
        description="Run agent rollouts on a dataset, grade them in place, record trajectories. "
                    "`mimoagent cleanup` removes leftover sandboxes (containers, local folders and their "
                    "processes) of crashed runs; `mimoagent payload build` packs CLI agents for offline installs; "
                    "`mimoagent view OUTPUT_DIR` browses rollouts in a local web page; "
                    "`mimoagent export OUTPUT_DIR --format sft|rl|atif` writes training exports.",
    )
    p.add_argument("-c", "--config", action="append", required=True, metavar="CONFIG",
                   help="YAML config; several = one config per instance at random (A/B), seeded")
    p.add_argument("--dataset", required=True, help="JSONL, parquet, local HF dataset folder or HF hub name")
    p.add_argument("--split", default=None, help="dataset split (Hugging Face datasets)")
    p.add_argument("--slice", default=None, metavar="A:B", help="select rows A..B (after --filter/--shuffle)")
    p.add_argument("--filter", default=None, metavar="REGEX", help="keep instance ids matching REGEX")
    p.add_argument("--shuffle", action="store_true", help="shuffle instances (seeded by --seed)")
    p.add_argument("--seed", type=int, default=0, help="seed for --shuffle and A/B config assignment")
    p.add_argument("--paired", action="store_true",
                   help="with several -c: run every config on every instance (paired A/B) instead of one each")
    p.add_argument("--workers", type=int, default=1, help="rollouts run in parallel (cluster-wide with --runner ray)")
    p.add_argument("--runner", choices=["thread", "ray"], default="thread",
                   help="thread: a pool in this process; ray: tasks on a Ray cluster (docs/ray.md)")
    p.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="Ray cluster to join (default: $RAY_ADDRESS, else a local cluster for this run)")
    p.add_argument("--ray-resources", default=None, metavar="CPU=1,memory=2GiB,sandbox=1",
                   help="each rollout's Ray resource request (default CPU=1)")
    p.add_argument("--num-rollouts", type=int, default=1, metavar="K", help="rollouts per instance")
    p.add_argument("--redo-existing", action="store_true", help="rerun rollouts that already finished")
    p.add_argument("--rerun-status", type=statuses_arg, default=[], metavar="STATUS,...",
                   help="rerun exactly the finished rollouts with these exit statuses, e.g. model_error,grading_error")
    p.add_argument("--override-config", action="append", default=[], metavar="JSON",
                   help='deep-merged into every config, e.g. \'{"agent": {"step_limit": 50}}\'')
    p.add_argument("--recalc-input", default=None, metavar="gt|DIR",
                   help="grade the reference solution (gt) or the submissions saved in DIR; no agent runs")
    p.add_argument("-o", "--output", required=True, help="output folder (one mimoagent at a time writes to it)")
    p.add_argument("--allow-empty", action="store_true", help="a dataset (or selection) of 0 rows is not an error")
    p.add_argument("--run-id", default=None, help=argparse.SUPPRESS)
    return p


def statuses_arg(text: str) -> list[str]:
    """argparse type of a comma-separated list of exit statuses (--rerun-status, export --status)."""
    from mimo_core.status import parse_statuses

    try:
        return [s.value for s in parse_statuses(text)]
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def build_cleanup_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mimoagent cleanup", description="Remove sandboxes left behind by crashed runs.")
    p.add_argument("--run-id", default=None, help="only this run's sandboxes")
    p.add_argument("--stale-only", action="store_true", help="only sandboxes whose runner process is gone")
    p.add_argument("--root", action="append", default=[], metavar="DIR",
                   help="folder holding local sandboxes (environment.backend_kwargs.root); default: the temp dir")
    p.add_argument("--namespace", action="append", default=[], metavar="NS",
                   help="Kubernetes namespace to clean (repeatable); default: the kubeconfig context's")
    return p


def _terminate_like_ctrl_c() -> None:
    """SIGTERM (a scheduler stopping us) takes the Ctrl-C path: running commands and model calls are cut
    short, rollouts record `interrupted` and remove their sandboxes. A second SIGTERM or Ctrl-C stops at
    once (see `_stop_now`)."""
    import signal
    import threading

    signals = 0

    def on_signal(signum: int, frame: object) -> None:
        nonlocal signals
        signals += 1
        if signals == 1:
            raise KeyboardInterrupt
        _stop_now()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)


STOP_NOW_GRACE_S = 2.0  # after a second signal: time the rollouts get to write traj.json and their record


def _stop_now() -> NoReturn:
    """Second signal: kill and remove every sandbox now, give the rollouts a moment to write what they
    have, and exit without waiting for anything else."""
    import os
    import threading
    import time

    from mimo_core.batch import cancel_all
    from mimo_core.environments.live import stop_all

    print("\nmimoagent: stopping now (second signal); rerun the command to resume", file=sys.stderr, flush=True)
    cancel_all()  # in case the second signal came before the first one's handling set it
    stop_all()
    deadline = time.monotonic() + STOP_NOW_GRACE_S
    for t in threading.enumerate():
        if t.name.startswith("rollout"):
            t.join(max(deadline - time.monotonic(), 0))
    stop_all()  # a sandbox a rollout started during the grace period
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _terminate_like_ctrl_c()
    try:
        if argv[:1] == ["cleanup"]:
            return _cleanup(build_cleanup_parser().parse_args(argv[1:]))
        if argv[:1] == ["view"]:
            from mimo_core.viewer.server import main as view

            return view(argv[1:], _Parser)
        if argv[:1] == ["export"]:
            from mimo_core.exports.cli import main as export

            return export(argv[1:], _Parser)
        if argv[:2] == ["payload", "build"]:
            from mimo_core.agents.cli.payload_cli import main as payload_build

            return payload_build(argv[2:], _Parser)
        return _run(build_parser().parse_args(argv))
    except DiskFull as e:
        print(f"mimoagent: error: {e}", file=sys.stderr)
        return EXIT_DISK_FULL
    except MimoError as e:
        print(f"mimoagent: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("\nmimoagent: interrupted; finished rollouts are kept, rerun the command to resume",
              file=sys.stderr)
        return 130
    finally:
        # Everything still alive is left to the interpreter's shutdown, whose collections would scan it
        # all again: frozen objects are skipped (the exit tail drops from ~0.8 s to ~0.15 s here).
        gc.freeze()


def _cleanup(args: argparse.Namespace) -> int:
    from mimo_core.environments.sweep import cleanup_all

    print(cleanup_all(args.run_id, args.stale_only, args.root, args.namespace))
    return 0


def _check_flags(args: argparse.Namespace) -> None:
    from mimo_core.errors import ConfigError

    if args.workers < 1:
        raise ConfigError("--workers must be at least 1")
    if args.num_rollouts < 1:
        raise ConfigError("--num-rollouts must be at least 1")
    args.ray = _ray_options(args)


def _ray_options(args: argparse.Namespace) -> Any:
    """`--runner ray` flags as RayOptions (None for the thread runner); a missing extra is one line."""
    from mimo_core.errors import ConfigError

    if args.runner != "ray":
        if args.ray_address is not None or args.ray_resources is not None:
            raise ConfigError("--ray-address and --ray-resources need --runner ray")
        return None
    from mimo_core.ray_runner.options import RayOptions, parse_resources, require_ray

    require_ray()
    resources = parse_resources(args.ray_resources) if args.ray_resources else None
    return RayOptions(address=args.ray_address or "", **({"resources": resources} if resources else {}))


def _run(args: argparse.Namespace) -> int:
    from mimo_core.cli_inputs import check_not_empty, check_output_dir, check_override_secrets
    from mimo_core.config import load_configs
    from mimo_core.datasets.loader import load_tasks
    from mimo_core.output_lock import output_lock
    from mimo_core.plan import select

    _check_flags(args)
    request = _request(args)
    for override in request.overrides:
        check_override_secrets(override)
    configs = load_configs(request.configs, request.overrides)
    if request.recalc is None:
        _warm_models(configs)
    tasks = load_tasks(request.dataset, request.split)
    selected = select(request.selection, tasks)
    check_not_empty(len(selected), args.dataset, bool(args.slice or args.filter), args.allow_empty)
    output = check_output_dir(args.output)
    with output_lock(output, request.run_id):
        return _run_locked(args, request, tasks, configs, output)


def _run_locked(args: argparse.Namespace, request: Any, tasks: list[Any], configs: list[Any], output: Path) -> int:
    from mimo_core.observers import load_observers
    from mimo_core.plan import plan_run
    from mimo_core.results import ResultsStore

    aside = ResultsStore(output).repair()
    if aside is not None:
        print(f"mimoagent: {output / 'results.jsonl'}: incomplete line(s) moved to {aside.name}; "
              "their rollouts are redone", file=sys.stderr)
    plan = plan_run(request, tasks, configs)
    jobs = plan.jobs
    print(f"mimoagent: run {request.run_id}: {len(plan.tasks)} instances, {len(jobs)} rollouts to run"
          + (f", {plan.skipped} already finished (use --redo-existing to rerun)" if plan.skipped > 0 else "")
          + f" -> {output}", file=sys.stderr)
    from mimo_core.environments.sweep import before_run

    before_run(configs, sweep=args.ray is None)  # a Ray run's sandboxes live on its nodes (docs/ray.md)
    observers = load_observers(request)
    for r in observers:
        r.start(plan)
    try:
        records = _run_with_progress(jobs, args.workers, observers, request.recalc is not None, args.ray)
    finally:
        for r in observers:
            r.finish()
    _print_summary(output)
    if records and all(r.infra_error for r in records):
        print(f"mimoagent: every rollout of this run ({len(records)}) ended in an infrastructure error; "
              f"see {output / 'results.jsonl'}", file=sys.stderr)
        return EXIT_ALL_INFRA
    return 0


def _warm_models(configs: list[Any]) -> None:
    """Import the model SDKs and build the clients in the background while the dataset loads and the
    first sandboxes start: `import openai` alone is most of the time to the first model request."""
    import threading

    from mimo_core.agents.factory import shared_model

    def warm() -> None:
        for c in configs:
            if c.config.agent.type == "default":
                try:
                    shared_model(c.config.model)
                except Exception:
                    pass

    # Not a daemon: an early error exit waits for the imports to finish, since interpreter shutdown
    # during a daemon thread's `import openai` can crash the process (seen as SIGSEGV, not exit 2).
    threading.Thread(target=warm, name="warm-models").start()


def _request(args: argparse.Namespace) -> Any:
    """The command line as a RunRequest: what the run planner and the observers are given."""
    from mimo_core.config import parse_override
    from mimo_core.plan import RunRequest, Selection, new_run_id

    return RunRequest(
        dataset=args.dataset, split=args.split,
        selection=Selection(filter=args.filter, shuffle=args.shuffle, slice=args.slice, seed=args.seed),
        configs=list(args.config),
        overrides=[parse_override(o) for o in args.override_config],
        num_rollouts=args.num_rollouts, redo_existing=args.redo_existing, rerun_status=args.rerun_status,
        recalc=args.recalc_input,
        paired=args.paired, output_dir=Path(args.output).resolve(), run_id=args.run_id or new_run_id(),
    )


def _run_with_progress(
    jobs: list[Any], workers: int, observers: list[Any], recalc: bool, ray: Any = None,
) -> list[Any]:
    from mimo_core.batch import run_jobs
    from mimo_core.summary import Tally

    tally = Tally(len(jobs))
    live = sys.stderr.isatty()
    progress = None
    if live and jobs:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        progress = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                            transient=False)
        bar = progress.add_task(tally.line(), total=len(jobs))
        progress.start()

    def on_result(record: Any) -> None:
        tally.add(record)
        for r in observers:
            r.record(record)
        if recalc:
            verdict = "Error" if record.infra_error else ("Pass" if record.passed else "Fail")
            print(f"{record.instance_id} [{record.config_name}#{record.rollout_index}]: Recalculated - {verdict}",
                  flush=True)
        if progress is not None:
            progress.update(bar, advance=1, description=tally.line())
        elif not recalc:
            print(f"{record.instance_id} [{record.config_name}#{record.rollout_index}]: {record.exit_status} "
                  f"reward={record.reward} · {tally.line()}", file=sys.stderr, flush=True)

    try:
        return run_jobs(jobs, workers, on_result, ray=ray)
    finally:
        if progress is not None:
            progress.stop()


def _print_summary(output: Path) -> None:
    """The table covers every record in the output folder, so a resumed run shows the whole picture."""
    from mimo_core.results import ResultsStore
    from mimo_core.summary import render_table, summarize

    records = list(ResultsStore(output).load().values())
    if records:
        print(render_table(summarize(records)))
        print(f"results: {output / 'results.jsonl'}")


if __name__ == "__main__":
    sys.exit(main())
