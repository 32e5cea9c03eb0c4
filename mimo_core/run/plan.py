"""What to run: a typed `RunRequest` and the one function that turns it into rollout jobs.

Every door plans here: the `mimoagent` command line, the Dagster `evaluate` job (launchpad, nightly
schedule) and UI backfills of partitions. So A/B assignment, resume (skip finished rollouts unless
`redo_existing`), reference grading and regrading saved submissions mean the same thing whichever door
started the run. The request is also what a CLI run hands to its observers (and so to the process that
records it into Dagster), serialized with `model_dump_json`.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.fields import FieldInfo

from mimo_core.base.values import resolved_folder
from mimo_core.config import NamedConfig, assign_config
from mimo_core.config_checks import check_templates_fit
from mimo_core.datasets.base import Task
from mimo_core.datasets.requirements import check_runnable
from mimo_core.errors import ConfigError
from mimo_core.records.results import RESULTS_FILE, ResultsStore
from mimo_core.records.trajectory import read_trajectory
from mimo_core.run.input_change import input_changed, repo_fingerprint
from mimo_core.run.job import GT, RolloutJob
from mimo_core.status import ExitStatus


def resolved_dir(text: str, flag: str) -> Path:
    """The absolute form of a folder flag (`resolved_folder`), its error one line naming the flag."""
    try:
        return resolved_folder(text)
    except ValueError as e:
        raise ConfigError(f"{flag} {e}") from None


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


class Selection(BaseModel):
    """Which rows run, applied in this order: filter (regex on instance ids), seeded shuffle, slice.
    `partitions` instead names exact (instance, config) pairs, as a Dagster backfill selects them."""

    model_config = ConfigDict(extra="forbid")

    filter: str | None = Field(default=None, description="keep instance ids matching this regex")
    shuffle: bool = Field(default=False, description="shuffle the rows (seeded by `seed`)")
    slice: str | None = Field(default=None, description="A:B, rows A..B after filter and shuffle")
    seed: int = Field(default=0, description="seed of the shuffle and of the A/B config assignment")
    partitions: list[tuple[str, str]] | None = Field(
        default=None, description="exact (instance, config) pairs, as a Dagster backfill selects them"
    )


class RunRequest(BaseModel):
    """A dataset × config set to run, as a command line or a Dagster run config states it."""

    model_config = ConfigDict(extra="forbid")

    dataset: str = Field(description="JSONL/parquet file, Harbor folder, local HF folder or hub name")
    split: str | None = Field(default=None, description="dataset split (Hugging Face datasets)")
    selection: Selection = Field(default_factory=Selection)
    configs: list[str] = Field(description="config files; several = one per instance at random (A/B)")
    paired: bool = Field(default=False, description="every config on every instance (paired A/B) instead")
    # May carry keys (a model endpoint's api_key): never serialized, so never in a log or a pipe.
    overrides: list[dict[str, Any]] = Field(default_factory=list, exclude=True)
    num_rollouts: int = Field(default=1, ge=1, le=100_000, description="K independent rollouts per instance")
    redo_existing: bool = Field(default=False, description="rerun rollouts that already finished")
    rerun_changed: bool = Field(
        default=False,
        description="also rerun the finished rollouts whose config, row or repository folder changed since they ran",
    )
    rerun_status: list[ExitStatus] = Field(
        default_factory=list,
        description="rerun exactly the finished rollouts that ended with these statuses "
        "(and run those never finished); every other status is kept",
    )
    recalc: str | None = Field(
        default=None,
        description="None: run the agent; 'gt': grade the reference "
        "solutions; else an earlier output folder to regrade",
    )
    output_dir: Path = Field(description="the run's output folder: results.jsonl and one folder per rollout")
    run_id: str = Field(default_factory=new_run_id, description="the run's id in results.jsonl and Dagster tags")

    @field_validator("output_dir")
    @classmethod
    def _resolved(cls, v: Path) -> Path:
        """Absolute, links resolved, once, here: every door, the lock, the resume and the observers (so
        the process recording the run, whatever its directory) name the same folder."""
        return resolved_folder(v)


def request_fields() -> dict[str, FieldInfo]:
    """RunRequest's fields as a door states them (a command line, a Dagster run config): the selection's
    fields at the top level. Every door derives its fields from this (tests/dagster/test_run_request_fields.py)."""
    fields: dict[str, FieldInfo] = {}
    for name, info in RunRequest.model_fields.items():
        fields.update(Selection.model_fields if name == "selection" else {name: info})
    return fields


def request_from_fields(values: dict[str, Any]) -> RunRequest:
    """A RunRequest from `request_fields()` names, validated by pydantic; a field left out takes its default."""
    values = dict(values)
    selection = Selection(**{k: values.pop(k) for k in list(values) if k in Selection.model_fields})
    return RunRequest(selection=selection, **values)


@dataclass
class RunRows:
    """What a request runs over, known (and checked) before its output folder is touched: the configs,
    every row of the dataset and the rows the selection keeps, in the order they will run."""

    configs: list[NamedConfig]
    tasks: list[Task]
    selected: list[Task]


@dataclass
class RunPlan:
    """The selected rows, the loaded configs, and the rollouts still to do."""

    tasks: list[Task]
    configs: list[NamedConfig]
    jobs: list[RolloutJob]
    skipped: int  # rollouts left out because they already finished (resume)
    changed: int = 0  # of those, how many ran with an input that has changed since (see --rerun-changed)
    selected: frozenset[tuple[str, str, int]] = frozenset()  # every rollout the request names, done or not
    dataset_rows: list[Task] = field(default_factory=list)  # every row of the dataset, selected or not


def select_rows(
    request: RunRequest,
    tasks: list[Task] | None = None,
    configs: list[NamedConfig] | None = None,
) -> RunRows:
    """The rows and configs of a request, loaded when not given, the selection applied, and the checks that
    need no output folder: the run's size, the templates against the rows. A door that must check them
    before it makes its folder (the CLI) calls this, then `plan_run(request, rows=...)`."""
    if configs is None:
        from mimo_core.config_checks import load_configs

        configs = load_configs(request.configs, request.overrides)
    if tasks is None:
        from mimo_core.datasets.loader import load_tasks

        tasks = load_tasks(request.dataset, request.split)
    selected = select(request.selection, tasks)
    _check_size(len(selected) * (len(configs) if request.paired else 1) * request.num_rollouts)
    if request.recalc is None:
        check_templates_fit(configs, selected)
    return RunRows(configs, tasks, selected)


def plan_run(
    request: RunRequest,
    tasks: list[Task] | None = None,
    configs: list[NamedConfig] | None = None,
    rows: RunRows | None = None,
) -> RunPlan:
    """The rollout jobs of a request, over `rows` (else `select_rows(request, tasks, configs)`: `tasks`, all
    rows before selection, and `configs` are loaded from the request when not given; a caller that already
    holds them, to register them or rows kept by Dagster, passes them in). Resume reads the output folder."""
    rows = rows if rows is not None else select_rows(request, tasks, configs)
    configs, selected = rows.configs, rows.selected
    sel = request.selection
    if request.recalc not in (None, GT):
        jobs = regrade_jobs(
            Path(request.recalc), selected, configs, request.output_dir, request.run_id, sel.seed, only=sel.partitions
        )
    else:
        jobs = [
            RolloutJob(
                task=task,
                config=config,
                rollout_index=k,
                output_dir=request.output_dir,
                run_id=request.run_id,
                recalc=request.recalc,
            )
            for task, config in _assignments(selected, configs, sel, request.paired)
            for k in range(request.num_rollouts)
        ]
    seen: dict[str, str | None] = {}
    for job in jobs:
        job.repo_fingerprint = repo_fingerprint(job.task, seen)
    todo = _not_finished(jobs, request.output_dir, request.redo_existing, set(request.rerun_status))
    changed = _changed(jobs, todo, request.output_dir)
    if request.rerun_changed and changed:
        again = {j.key for j in changed} | {j.key for j in todo}
        todo = [j for j in jobs if j.key in again]
        changed = []
    check_runnable((j.task, j.config) for j in todo)
    keys = frozenset(j.key for j in jobs)
    return RunPlan(selected, configs, todo, len(jobs) - len(todo), len(changed), keys, rows.tasks)


def _changed(jobs: list[RolloutJob], todo: list[RolloutJob], output_dir: Path) -> list[RolloutJob]:
    """The jobs kept as finished whose recorded input (config, row, repository folder) differs from now."""
    kept = {j.key for j in todo}
    records = ResultsStore(output_dir).load()
    return [
        j
        for j in jobs
        if j.key not in kept
        and j.key in records
        and input_changed(records[j.key], j.input_fingerprint, j.repo_fingerprint)
    ]


MAX_ROLLOUTS = 1_000_000  # per run: each is a job object, a folder and a results line


def _check_size(n: int) -> None:
    if n > MAX_ROLLOUTS:
        raise ConfigError(
            f"{n:,} rollouts in one run is more than {MAX_ROLLOUTS:,}; select fewer rows "
            "(--slice, --filter) or fewer --num-rollouts"
        )


def _not_finished(
    jobs: list[RolloutJob], output_dir: Path, redo_existing: bool, rerun_status: set[ExitStatus] | None = None
) -> list[RolloutJob]:
    """Resume: a rollout is done once its results.jsonl line is there (and, for one that failed through
    its input's fault, only while that input is unchanged). With `rerun_status` (Harbor's `jobs resume -f`)
    a recorded rollout is done unless its status is one of those, whatever the status: the user chose."""
    if redo_existing and rerun_status:
        raise ConfigError("--redo-existing reruns everything; it cannot be combined with --rerun-status")
    if redo_existing:
        return jobs
    if rerun_status:
        store = ResultsStore(output_dir)
        done = {
            k
            for k, r in store.load().items()
            if r.exit_status not in rerun_status and (output_dir / r.output_dir / "traj.json").exists()
        }
        return [j for j in jobs if j.key not in done]
    finished = ResultsStore(output_dir).finished({j.key: j.input_fingerprint for j in jobs})
    return [j for j in jobs if j.key not in finished]


def select(sel: Selection, tasks: list[Task]) -> list[Task]:
    """The rows a selection keeps, in the order they will run."""
    if sel.partitions is not None:
        wanted = {i for i, _ in sel.partitions}
        return [t for t in tasks if t.instance_id in wanted]
    from mimo_core.datasets.loader import select_tasks

    return select_tasks(tasks, sel.slice, sel.filter, sel.shuffle, sel.seed)


def _assignments(
    tasks: list[Task],
    configs: list[NamedConfig],
    sel: Selection,
    paired: bool = False,
) -> Iterable[tuple[Task, NamedConfig]]:
    """A/B: each row gets one config at random (seeded), or every config when `paired`; named partitions
    get exactly their config."""
    if sel.partitions is None and paired:
        for task in tasks:
            for config in configs:
                yield task, config
        return
    if sel.partitions is None:
        for task in tasks:
            yield task, assign_config(task.instance_id, configs, sel.seed)
        return
    by_id = {t.instance_id: t for t in tasks}
    by_name = {c.name: c for c in configs}
    for instance_id, config_name in sel.partitions:
        if instance_id not in by_id:
            raise ConfigError(f"partition {config_name}|{instance_id}: no row with instance_id {instance_id!r}")
        if config_name not in by_name:
            raise ConfigError(f"partition {config_name}|{instance_id}: no config named {config_name!r}")
        yield by_id[instance_id], by_name[config_name]


def regrade_jobs(
    source: Path,
    tasks: list[Task],
    configs: list[NamedConfig],
    output_dir: Path,
    run_id: str,
    seed: int = 0,
    only: Iterable[tuple[str, str]] | None = None,
) -> list[RolloutJob]:
    """Regrade the submissions an earlier run saved in `source`, under that run's config names (so A/B
    stays A/B); the sandbox settings come from the config given now (by name, else the A/B pick).
    `only` limits it to some (instance, config) pairs."""
    if not (source / RESULTS_FILE).exists():
        raise ConfigError(f"--recalc-input {source}: no {RESULTS_FILE} there (expected an earlier -o folder)")
    if resolved_dir(str(source), "--recalc-input") == output_dir.resolve():
        raise ConfigError("--recalc-input DIR must differ from -o: a recalc writes new rollout folders")
    wanted = set(only) if only is not None else None
    by_name = {c.name: c for c in configs}
    by_id = {t.instance_id: t for t in tasks}
    finished = ResultsStore(source).finished()
    if not finished:
        raise ConfigError(f"--recalc-input {source}: its {RESULTS_FILE} holds no finished rollout to regrade")
    jobs = []
    for (instance_id, config_name, k), rec in sorted(finished.items()):
        task = by_id.get(instance_id)
        if task is None or (wanted is not None and (instance_id, config_name) not in wanted):
            continue
        try:
            submission = read_trajectory(source / rec.output_dir / "traj.json").submission
        except ValueError as e:
            raise ConfigError(f"--recalc-input: {e}") from None
        chosen = by_name.get(config_name) or assign_config(instance_id, configs, seed)
        config = NamedConfig(name=config_name, path=chosen.path, config=chosen.config)
        jobs.append(
            RolloutJob(
                task=task,
                config=config,
                rollout_index=k,
                output_dir=output_dir,
                run_id=run_id,
                recalc=str(source),
                recalc_submission=submission or "",
            )
        )
    return jobs
