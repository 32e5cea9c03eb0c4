"""The run command's flow: configs and rows loaded once, the output folder locked, the plan reported, the
jobs run with live progress, observers told, the end-of-run table. The flags are `parser.py`'s."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mimo_core.cli.parser import EXIT_ALL_INFRA, check_flags, request_from_args

if TYPE_CHECKING:  # (imported where used: a start imports only what its command needs)
    from mimo_core.config import NamedConfig
    from mimo_core.records.results import ResultRecord
    from mimo_core.run.batch import RunSpend
    from mimo_core.run.job import RolloutJob
    from mimo_core.run.observers import RunObserver
    from mimo_core.run.plan import RunRequest, RunRows
    from mimo_core.run.ray.options import RayOptions


def run(args: argparse.Namespace) -> int:
    """The run command, from parsed flags to its exit code (bad input raises `ConfigError`)."""
    from mimo_core.cli.input_checks import check_not_empty, check_output_dir, check_override_secrets
    from mimo_core.config_checks import load_configs
    from mimo_core.run.output_lock import output_lock
    from mimo_core.run.plan import select_rows

    check_flags(args)
    request = request_from_args(args)
    for override in request.overrides:
        check_override_secrets(override)
    configs = load_configs(request.configs, request.overrides)
    if request.recalc is None:
        _warm_models(configs)  # while the rows load
    rows = select_rows(request, configs=configs)  # the rows, selected and checked: before -o is made
    check_not_empty(len(rows.selected), args.dataset, bool(args.slice or args.filter), args.allow_empty)
    output = check_output_dir(request.output_dir)
    with output_lock(output, request.run_id):
        return _run_locked(args, request, rows)


def _run_locked(args: argparse.Namespace, request: RunRequest, rows: RunRows) -> int:
    from mimo_core.records.results import ResultsStore
    from mimo_core.run.observers import load_observers
    from mimo_core.run.plan import plan_run

    output = request.output_dir
    aside = ResultsStore(output).repair()
    if aside is not None:
        print(
            f"mimoagent: {output / 'results.jsonl'}: incomplete line(s) moved to {aside.name}; "
            "their rollouts are redone",
            file=sys.stderr,
        )
    plan = plan_run(request, rows=rows)  # resume reads -o: under its lock, once repaired
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

    before_run(plan.configs, sweep=args.ray is None)  # a Ray run's sandboxes live on its nodes (docs/ray.md)
    observers = load_observers(request)
    for r in observers:
        r.start(plan)
    from mimo_core.run.batch import RunSpend

    spend = RunSpend(min((c.config.cost_limit for c in plan.configs if c.config.cost_limit), default=0.0))
    try:
        records = _run_with_progress(
            jobs, args.workers, observers, request.recalc is not None, args.ray, (args.retries, args.retry_delay, spend)
        )
    finally:
        for r in observers:
            r.finish()
    _print_summary(output, plan.selected)
    if spend.not_started:
        print(
            f"mimoagent: cost_limit ${spend.limit:g} reached (${spend.spent:.4g} spent): {spend.not_started} "
            "rollout(s) not started; a resume runs them",
            file=sys.stderr,
        )
    if records and all(r.infra_error for r in records):
        print(
            f"mimoagent: every rollout of this run ({len(records)}) ended in an infrastructure error; "
            f"see {output / 'results.jsonl'}",
            file=sys.stderr,
        )
        return EXIT_ALL_INFRA
    return 0


def _warm_models(configs: list[NamedConfig]) -> None:
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


def _run_with_progress(
    jobs: list[RolloutJob],
    workers: int,
    observers: list[RunObserver],
    recalc: bool,
    ray: RayOptions | None = None,
    retrying: tuple[int, float, RunSpend | None] = (0, 5.0, None),
) -> list[ResultRecord]:
    """`retrying`: `--retries`, `--retry-delay` and the run's cost limit (batch.RunSpend)."""
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

    def on_result(record: ResultRecord) -> None:
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
        retries, delay, spend = retrying
        return run_jobs(jobs, workers, on_result, ray=ray, retries=retries, retry_delay=delay, spend=spend)
    finally:
        if progress is not None:
            progress.stop()


def _reason(record: ResultRecord) -> str:
    """Why a rollout ended in an error, on one line (the first line of its error), or ""."""
    lines = (record.error or "").strip().splitlines() if record.error_class else []
    first = " ".join(lines[0].split()) if lines else ""
    return first[:300] + ("..." if len(first) > 300 else "")


def _print_summary(output: Path, selected: frozenset[tuple[str, str, int]]) -> None:
    """The table covers the rollouts this run selected, finished now or by an earlier run (a resume shows
    the whole picture of its selection); records of other selections in the folder are counted beside it."""
    from mimo_core.cli.report import render_table, run_total, summarize
    from mimo_core.records.results import ResultsStore

    everything = ResultsStore(output).load()
    records = [r for k, r in everything.items() if k in selected]
    if records:
        summaries = summarize(records)
        print(render_table(summaries))
        print(run_total(summaries))
    others = len(everything) - len(records)
    if others:
        print(
            f"(the table covers the {len(records)} rollout(s) this run selected; {output / 'results.jsonl'} "
            f"holds {others} more from other selections)"
        )
    if everything:
        print(f"results: {output / 'results.jsonl'}")
