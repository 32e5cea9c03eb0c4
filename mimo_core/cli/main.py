"""`mimoagent`: run rollouts from a shell. Imports stay light so `--help` and start-up are fast."""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path
from typing import Any, NoReturn

from mimo_core.cli.arg_types import statuses_arg
from mimo_core.errors import MimoError
from mimo_core.run.disk_full import DiskFull

EXIT_BAD_INPUT = 2
EXIT_ALL_INFRA = 3  # every rollout this run ran ended in an infrastructure error (nothing was graded)
EXIT_DISK_FULL = 4  # the disk filled up mid-run: stopped, finished rollouts kept
MAX_WORKERS = 4096
MAX_NUM_ROLLOUTS = 100_000


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
    p.add_argument(
        "-c",
        "--config",
        action="append",
        required=True,
        metavar="CONFIG",
        help="YAML config; several = one config per instance at random (A/B), seeded",
    )
    p.add_argument("--dataset", required=True, help="JSONL, parquet, local HF dataset folder or HF hub name")
    p.add_argument("--split", default=None, help="dataset split (Hugging Face datasets)")
    p.add_argument("--slice", default=None, metavar="A:B", help="select rows A..B (after --filter/--shuffle)")
    p.add_argument("--filter", default=None, metavar="REGEX", help="keep instance ids matching REGEX")
    p.add_argument("--shuffle", action="store_true", help="shuffle instances (seeded by --seed)")
    p.add_argument("--seed", type=int, default=0, help="seed for --shuffle and A/B config assignment")
    p.add_argument(
        "--paired",
        action="store_true",
        help="with several -c: run every config on every instance (paired A/B) instead of one each",
    )
    p.add_argument("--workers", type=int, default=1, help="rollouts run in parallel (cluster-wide with --runner ray)")
    p.add_argument(
        "--runner",
        choices=["thread", "ray"],
        default="thread",
        help="thread: a pool in this process; ray: tasks on a Ray cluster (docs/ray.md)",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="Ray cluster to join (default: $RAY_ADDRESS, else a local cluster for this run)",
    )
    p.add_argument(
        "--ray-resources",
        default=None,
        metavar="CPU=1,memory=2GiB,sandbox=1",
        help="each rollout's Ray resource request (default CPU=1)",
    )
    p.add_argument("--num-rollouts", type=int, default=1, metavar="K", help="rollouts per instance")
    p.add_argument("--redo-existing", action="store_true", help="rerun rollouts that already finished")
    p.add_argument(
        "--rerun-changed",
        action="store_true",
        help="also rerun the finished rollouts whose config, row or repository folder changed since",
    )
    p.add_argument(
        "--rerun-status",
        type=statuses_arg,
        default=[],
        metavar="STATUS,...",
        help="rerun exactly the finished rollouts with these exit statuses, e.g. model_error,grading_error",
    )
    p.add_argument(
        "--override-config",
        action="append",
        default=[],
        metavar="JSON",
        help='deep-merged into every config, e.g. \'{"agent": {"step_limit": 50}}\'',
    )
    p.add_argument(
        "--recalc-input",
        default=None,
        metavar="gt|DIR",
        help="grade the reference solution (gt) or the submissions saved in DIR; no agent runs",
    )
    p.add_argument("-o", "--output", required=True, help="output folder (one mimoagent at a time writes to it)")
    p.add_argument("--allow-empty", action="store_true", help="a dataset (or selection) of 0 rows is not an error")
    p.add_argument("--run-id", default=None, help=argparse.SUPPRESS)
    return p


def build_cleanup_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mimoagent cleanup",
        description="Remove sandboxes left behind by crashed runs. The sandboxes "
        "of a run that is still going are left alone unless --force is given.",
    )
    p.add_argument("--run-id", default=None, help="only this run's sandboxes")
    p.add_argument(
        "--stale-only",
        action="store_true",
        help="only sandboxes whose runner process is gone, and say nothing of the others",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="also remove the sandboxes of runs that are still going (their rollouts end as environment_error)",
    )
    p.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="folder holding local sandboxes (environment.backend_kwargs.root); default: the temp dir",
    )
    p.add_argument(
        "--namespace",
        action="append",
        default=[],
        metavar="NS",
        help="Kubernetes namespace to clean (repeatable); default: the kubeconfig context's",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    from mimo_core.cli.signals import install, leave

    argv = list(sys.argv[1:] if argv is None else argv)
    install()  # SIGTERM and SIGHUP stop like Ctrl-C; a second signal stops at once
    try:
        try:
            code = _dispatch(argv)
        except DiskFull as e:
            print(f"mimoagent: error: {e}", file=sys.stderr)
            code = EXIT_DISK_FULL
        except MimoError as e:
            print(f"mimoagent: error: {e}", file=sys.stderr)
            code = EXIT_BAD_INPUT
        if leave():  # stopped, though the run ended (its rollouts cancelled) before the unwind came
            raise KeyboardInterrupt
        return code
    except KeyboardInterrupt:
        leave()
        print("\nmimoagent: interrupted; finished rollouts are kept, rerun the command to resume", file=sys.stderr)
        return 130
    finally:
        # Everything still alive is left to the interpreter's shutdown, whose collections would scan it
        # all again: frozen objects are skipped (the exit tail drops from ~0.8 s to ~0.15 s here).
        gc.freeze()


def _dispatch(argv: list[str]) -> int:
    if argv[:1] == ["cleanup"]:
        return _cleanup(build_cleanup_parser().parse_args(argv[1:]))
    if argv[:1] == ["view"]:
        from mimo_core.viewer.server import main as view

        return view(argv[1:], _Parser)
    if argv[:1] == ["export"]:
        from mimo_core.exports.cli import main as export

        return export(argv[1:], _Parser)
    if argv[:2] == ["payload", "build"]:
        from mimo_core.agents.blackbox.payload_cli import main as payload_build

        return payload_build(argv[2:], _Parser)
    return _run(build_parser().parse_args(argv))


def _cleanup(args: argparse.Namespace) -> int:
    from mimo_core.environments.sweep import cleanup_all

    if args.force and args.stale_only:
        from mimo_core.errors import ConfigError

        raise ConfigError("--force and --stale-only contradict each other")
    summary, live = cleanup_all(args.run_id, args.root, args.namespace, force=args.force)
    print(summary)
    if live and not args.stale_only:
        shown = ", ".join(live[:5]) + (f" and {len(live) - 5} more" if len(live) > 5 else "")
        print(
            f"mimoagent cleanup: left {len(live)} sandbox(es) alone because their run is still going: {shown}; "
            "stop that run first, or pass --force to remove them anyway",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    return 0


def _check_flags(args: argparse.Namespace) -> None:
    from mimo_core.errors import ConfigError

    if not 1 <= args.workers <= MAX_WORKERS:
        raise ConfigError(f"--workers must be between 1 and {MAX_WORKERS:,}")
    if not 1 <= args.num_rollouts <= MAX_NUM_ROLLOUTS:
        raise ConfigError(f"--num-rollouts must be between 1 and {MAX_NUM_ROLLOUTS:,}")
    if not args.output.strip():
        raise ConfigError("-o: an empty path; name the output folder")
    if args.recalc_input is not None and not args.recalc_input.strip():
        raise ConfigError("--recalc-input: an empty path; give gt or an earlier output folder")
    args.ray = _ray_options(args)


def _ray_options(args: argparse.Namespace) -> Any:
    """`--runner ray` flags as RayOptions (None for the thread runner); a missing extra is one line."""
    from mimo_core.errors import ConfigError

    if args.runner != "ray":
        if args.ray_address is not None or args.ray_resources is not None:
            raise ConfigError("--ray-address and --ray-resources need --runner ray")
        return None
    from mimo_core.run.ray.options import RayOptions, parse_resources, require_ray

    require_ray()
    resources = parse_resources(args.ray_resources) if args.ray_resources else None
    return RayOptions(address=args.ray_address or "", **({"resources": resources} if resources else {}))


def _run(args: argparse.Namespace) -> int:
    from mimo_core.cli.input_checks import check_not_empty, check_output_dir, check_override_secrets
    from mimo_core.config_checks import load_configs
    from mimo_core.datasets.loader import load_tasks
    from mimo_core.run.output_lock import output_lock
    from mimo_core.run.plan import select

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
    from mimo_core.records.results import ResultsStore
    from mimo_core.run.observers import load_observers
    from mimo_core.run.plan import plan_run

    aside = ResultsStore(output).repair()
    if aside is not None:
        print(
            f"mimoagent: {output / 'results.jsonl'}: incomplete line(s) moved to {aside.name}; "
            "their rollouts are redone",
            file=sys.stderr,
        )
    plan = plan_run(request, tasks, configs)
    jobs = plan.jobs
    print(
        f"mimoagent: run {request.run_id}: {len(plan.tasks)} instances, {len(jobs)} rollouts to run"
        + (f", {plan.skipped} already finished (use --redo-existing to rerun)" if plan.skipped > 0 else "")
        + f" -> {output}",
        file=sys.stderr,
    )
    if plan.changed:
        print(
            f"mimoagent: {plan.changed} finished rollout(s) ran with a config, row or repository that has "
            "changed since; they are kept as they are (--rerun-changed runs them again)",
            file=sys.stderr,
        )
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
    _print_summary(output, plan.selected)
    if records and all(r.infra_error for r in records):
        print(
            f"mimoagent: every rollout of this run ({len(records)}) ended in an infrastructure error; "
            f"see {output / 'results.jsonl'}",
            file=sys.stderr,
        )
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


# The flag (argparse dest) behind each RunRequest field (mimo_core.run.plan.request_fields); a field no flag
# sets says why. tests/dagster/test_run_request_fields.py fails when RunRequest gains a field not listed.
REQUEST_FLAGS = {
    "dataset": "dataset",
    "split": "split",
    "filter": "filter",
    "shuffle": "shuffle",
    "slice": "slice",
    "seed": "seed",
    "configs": "config",
    "paired": "paired",
    "overrides": "override_config",
    "num_rollouts": "num_rollouts",
    "redo_existing": "redo_existing",
    "rerun_status": "rerun_status",
    "rerun_changed": "rerun_changed",
    "recalc": "recalc_input",
    "output_dir": "output",
    "run_id": "run_id",
}
NOT_FLAGS = {"partitions": "a Dagster backfill selects partitions; a command line selects rows"}


def _request(args: argparse.Namespace) -> Any:
    """The command line as a RunRequest, validated by pydantic: what the run planner and the observers
    are given. A flag left unset (None) takes the request's default."""
    from pydantic import ValidationError

    from mimo_core.cli.input_checks import resolved_dir
    from mimo_core.config import parse_override
    from mimo_core.errors import ConfigError
    from mimo_core.run.plan import request_from_fields

    values = {field: getattr(args, dest) for field, dest in REQUEST_FLAGS.items()}
    values["configs"] = list(values["configs"])
    values["overrides"] = [parse_override(o) for o in values["overrides"]]
    values["output_dir"] = resolved_dir(values["output_dir"], "-o")
    try:
        return request_from_fields({k: v for k, v in values.items() if v is not None})
    except ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][-1]) if err["loc"] else "?"
        flag = "--" + REQUEST_FLAGS.get(field, field).replace("_", "-")
        raise ConfigError(f"{flag}: {err['msg']}") from None


def _run_with_progress(
    jobs: list[Any],
    workers: int,
    observers: list[Any],
    recalc: bool,
    ray: Any = None,
) -> list[Any]:
    from mimo_core.cli.report import Tally
    from mimo_core.run.batch import run_jobs

    tally = Tally(len(jobs))
    live = sys.stderr.isatty()
    progress = None
    if live and jobs:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        progress = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), transient=False)
        bar = progress.add_task(tally.line(), total=len(jobs))
        progress.start()

    def on_result(record: Any) -> None:
        tally.add(record)
        for r in observers:
            r.record(record)
        name = f"{record.instance_id} [{record.config_name}#{record.rollout_index}]"
        why = _reason(record)
        if recalc:
            verdict = "Error" if record.infra_error else ("Pass" if record.passed else "Fail")
            print(f"{name}: Recalculated - {verdict}{why and f' ({why})'}", flush=True)
        if progress is not None:
            progress.update(bar, advance=1, description=tally.line())
            if why and not recalc:  # an error is printed above the bar, where it stays
                progress.console.print(f"{name}: {record.exit_status}: {why}", markup=False, highlight=False)
        elif not recalc:
            print(
                f"{name}: {record.exit_status} reward={record.reward}{why and f' ({why})'} · {tally.line()}",
                file=sys.stderr,
                flush=True,
            )

    try:
        return run_jobs(jobs, workers, on_result, ray=ray)
    finally:
        if progress is not None:
            progress.stop()


def _reason(record: Any) -> str:
    """Why a rollout ended in an error, on one line (the first line of its error), or ""."""
    lines = (record.error or "").strip().splitlines() if record.error_class else []
    first = " ".join(lines[0].split()) if lines else ""
    return first[:300] + ("..." if len(first) > 300 else "")


def _print_summary(output: Path, selected: frozenset[tuple[str, str, int]]) -> None:
    """The table covers the rollouts this run selected, finished now or by an earlier run (a resume shows
    the whole picture of its selection); records of other selections in the folder are counted beside it."""
    from mimo_core.cli.report import render_table, summarize
    from mimo_core.records.results import ResultsStore

    everything = ResultsStore(output).load()
    records = [r for k, r in everything.items() if k in selected]
    if records:
        print(render_table(summarize(records)))
    others = len(everything) - len(records)
    if others:
        print(
            f"(the table covers the {len(records)} rollout(s) this run selected; {output / 'results.jsonl'} "
            f"holds {others} more from other selections)"
        )
    if everything:
        print(f"results: {output / 'results.jsonl'}")


if __name__ == "__main__":
    sys.exit(main())
