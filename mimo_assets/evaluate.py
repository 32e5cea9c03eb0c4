"""The `evaluate` door (launchpad, nightly schedule, `evaluate_fanout` chunks): its run config and what
its step does: plan like the CLI, run on the core's pool, log each partition's materializations as it
finishes."""

from __future__ import annotations

from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from types import GenericAlias
from typing import TYPE_CHECKING, Any, get_args, get_origin

from dagster import AssetMaterialization, Config, DagsterInstance
from pydantic import Field, create_model
from pydantic.fields import FieldInfo

from mimo_assets.analysis.designs import design_tags
from mimo_assets.eventlog.stream import materializations, run_in_thread
from mimo_assets.inputs import config_events, dataset_events, registered_configs, upstream
from mimo_assets.partitions import dataset_name, register_planned
from mimo_core.run.plan import RunRequest, request_fields, request_from_fields
from mimo_core.settings import CodeLocationSettings
from resources import BatchRunner, ModelEndpoint, OutputStore, SandboxBackend

# RunRequest fields the Dagster run fills in itself, so the launchpad does not ask for them (and why).
FILLED_BY_THE_RUN = {
    "overrides": "the model_endpoint and sandbox_backend resources (keys stay Dagster EnvVars)",
    "run_id": "the Dagster run's own id",
    "partitions": "a backfill of the rollouts assets selects partitions; this job selects rows",
}
# Where the run config may leave a required field empty, and what the run then uses.
_RUN_DEFAULTS: dict[str, tuple[Any, str]] = {
    "dataset": ("", "default $MIMOAGENT_DATASET"),
    "configs": ([], "default: every registered config"),
    "output_dir": ("", "default <output root>/runs/<run id>"),
}
# Fields of this job only: how the run executes, not what it plans.
_RUN_ONLY: dict[str, Any] = {
    "workers": (int, Field(default=4, ge=1, description="rollouts run at a time (or on Ray: batch_runner)")),
}


def _config_type(annotation: Any) -> Any:
    """A RunRequest field's type as Dagster config can state it. Dagster config knows no `Path`, and it
    spells an Enum by its member names (MODEL_ERROR) where the CLI takes values (model_error): both go
    in as strings and RunRequest validates them, with the same words as the CLI's."""
    if annotation is Path:
        return str
    if isinstance(annotation, type) and issubclass(annotation, StrEnum):
        return str
    if get_origin(annotation) is list:
        (item,) = get_args(annotation)
        return GenericAlias(list, (_config_type(item),))  # list[item's config type]
    return annotation


def _field(name: str, info: FieldInfo) -> tuple[Any, Any]:
    """The run config's field for a RunRequest field: its type, description, default and bounds."""
    kind = _config_type(info.annotation)
    bounds = {k: getattr(m, k) for m in info.metadata for k in ("ge", "gt", "le", "lt") if hasattr(m, k)}
    if name in _RUN_DEFAULTS:
        default, note = _RUN_DEFAULTS[name]
        description = f"{info.description}; {note}"
        if isinstance(default, list):
            return kind, Field(default_factory=list, description=description, **bounds)
        return kind, Field(default=default, description=description, **bounds)
    if info.default_factory is not None:
        return kind, Field(default_factory=info.default_factory, description=info.description, **bounds)
    return kind, Field(default=info.default, description=info.description, **bounds)


class _EvaluateConfigBase(Config):
    def to_request(self, **resolved: Any) -> RunRequest:
        """The planner's request, validated by RunRequest; `resolved` gives what the run fills in (dataset,
        configs, output...)."""
        values = {k: getattr(self, k) for k in request_fields() if k in type(self).model_fields}
        return request_from_fields({**values, **resolved})


_FIELDS: dict[str, Any] = {
    **{name: _field(name, info) for name, info in request_fields().items() if name not in FILLED_BY_THE_RUN},
    **_RUN_ONLY,
}

if TYPE_CHECKING:

    class EvaluateConfig(_EvaluateConfigBase):
        """What a type checker sees of the model built below: its fields are made from RunRequest's."""

        def __getattr__(self, name: str) -> Any: ...

else:
    EvaluateConfig = create_model(
        "EvaluateConfig",
        __base__=_EvaluateConfigBase,
        __doc__="A dataset × config set, like a `mimoagent` command line (launchpad, schedules): RunRequest's "
        "fields (mimo_core.run.plan.request_fields) less those the run fills in, plus how it runs.",
        **_FIELDS,
    )


def execute(
    instance: DagsterInstance,
    cfg: EvaluateConfig,
    run_id: str,
    store: OutputStore,
    model: ModelEndpoint,
    sandbox: SandboxBackend,
    log: Any,
    tags: dict[str, str],
    runner: BatchRunner | None = None,
    design_dir: Path | None = None,
) -> Iterator[AssetMaterialization | list[Any]]:
    """Plan with the CLI's planner (A/B assignment, skip finished unless redo_existing) and run on the
    core's pool. `cfg` is an EvaluateConfig; `design_dir`, the folder an A/B design is recorded under
    (evaluate_fanout's chunks: the run's, not the chunk's)."""
    from mimo_core.datasets.loader import load_tasks
    from mimo_core.run.plan import plan_run

    request = cfg.to_request(
        dataset=cfg.dataset or CodeLocationSettings.read().dataset,
        configs=cfg.configs or list(registered_configs(instance).values()),
        overrides=[o for o in (model.overrides(), sandbox.overrides()) if o],
        output_dir=Path(cfg.output_dir).expanduser() if cfg.output_dir else store.run_dir(run_id),
        run_id=run_id,
    )
    if not request.dataset:
        raise ValueError("evaluate: no dataset (set `dataset` in the run config or $MIMOAGENT_DATASET)")
    if not request.configs:
        raise ValueError("evaluate: no config files given and none registered yet")
    tasks = load_tasks(request.dataset, request.split)
    yield from dataset_events(instance, tasks, request.dataset, request.split, store.datasets_dir(), tags)
    yield from config_events(instance, request.configs, tags)
    plan = plan_run(request, tasks)
    dataset = dataset_name(request.dataset, request.split)
    design = design_tags(request, [c.name for c in plan.configs], dataset, design_dir)
    if design:  # an A/B: ab_comparison compares exactly this run's cells, by this design
        instance.add_run_tags(run_id, design)
    register_planned(instance, dataset, [(i, c) for i, c, _ in (j.key for j in plan.jobs)])  # "missing" until done
    log.info(f"{len(plan.jobs)} rollouts to run over {len(plan.tasks)} instances -> {request.output_dir}")
    records = run_in_thread(plan.jobs, cfg.workers, runner.ray_options() if runner else None)
    yield from materializations(
        instance,
        dataset,
        records,
        [j.key for j in plan.jobs],
        request.output_dir,
        upstream(instance),
        tags,
        graded_only=request.recalc is not None,
        log=log,
    )
