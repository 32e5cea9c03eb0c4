"""A/B designs: a run with several configs (a CLI run, an `evaluate` run, a nightly one) records how it
assigned them, so `ab_comparison` compares exactly that run's cells with the statistic of that design.

The design is two tags on the Dagster run that recorded (or ran) it: `mimoagent/ab` (`random`: one config
per instance drawn with the run's seed; `paired`: every config on every instance) and `mimoagent/ab_design`
(JSON: seed, config names, dataset, output folder, the mimoagent run id). Runs over the same output folder
with the same design (a run resumed after a kill) are one designed comparison.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from dagster import DagsterInstance, RunsFilter
from pydantic import BaseModel

from mimo_assets.asset_keys import GRADED_RESULTS
from mimo_assets.dagster_private import asset_event_summaries
from mimo_core.run.plan import RunRequest

if TYPE_CHECKING:
    import polars as pl

AB_TAG = "mimoagent/ab"
DESIGN_TAG = "mimoagent/ab_design"
DESIGNS = ("random", "paired")


class DesignSpec(BaseModel):
    """What one run says about its design (the `mimoagent/ab_design` tag)."""

    seed: int
    configs: list[str]
    dataset: str
    output_dir: str
    run_id: str


class Design(BaseModel):
    """One designed comparison: every run that carried it out (a resumed run: several)."""

    design: Literal["random", "paired"]
    seed: int
    configs: list[str]
    dataset: str
    output_dir: str
    run_ids: list[str]  # mimoagent run ids
    dagster_run_ids: list[str]


def design_tags(
    request: RunRequest,
    config_names: list[str],
    dataset: str,
    output_dir: Path | None = None,
) -> dict[str, str]:
    """The tags a run with several configs records its design in; none for a single config."""
    names = sorted(set(config_names))
    if len(names) < 2:
        return {}
    spec = DesignSpec(
        seed=request.selection.seed,
        configs=names,
        dataset=dataset,
        output_dir=str(output_dir or request.output_dir),
        run_id=request.run_id,
    )
    return {AB_TAG: "paired" if request.paired else "random", DESIGN_TAG: spec.model_dump_json()}


def designs(instance: DagsterInstance) -> list[Design]:
    """Every designed comparison recorded in the instance, oldest first."""
    found: dict[tuple[str, int, tuple[str, ...], str, str], Design] = {}
    for kind in DESIGNS:
        for run in reversed(instance.get_runs(RunsFilter(tags={AB_TAG: kind}))):
            try:
                spec = DesignSpec.model_validate_json(run.tags.get(DESIGN_TAG, ""))
            except ValueError:
                continue  # a tag written by hand or cut short: not a design we can trust
            key = (kind, spec.seed, tuple(spec.configs), spec.dataset, spec.output_dir)
            design = found.setdefault(
                key,
                Design(
                    design=kind,
                    seed=spec.seed,
                    configs=spec.configs,
                    dataset=spec.dataset,
                    output_dir=spec.output_dir,
                    run_ids=[],
                    dagster_run_ids=[],
                ),
            )
            if spec.run_id not in design.run_ids:
                design.run_ids.append(spec.run_id)
            design.dagster_run_ids.append(run.run_id)
    return list(found.values())


def design_cells(
    instance: DagsterInstance, design: Design, events: pl.DataFrame | None = None
) -> dict[tuple[str, str], Path]:
    """(instance, config) → the run folder of each cell the design's runs graded (its graded_results
    materializations in those runs, the latest of each), read once each as a summary
    (dagster_private.asset_event_summaries), or picked from `events` (table.event_frame of the graded
    materializations, which analysis/cache.py keeps between refreshes)."""
    import polars as pl  # here: the recording imports design_tags, and never polars

    from mimo_assets.analysis.table import event_frame

    if events is None:
        events = event_frame(asset_event_summaries(instance, GRADED_RESULTS, run_ids=design.dagster_run_ids))
    mine = events.filter(
        pl.col("run_id").is_in(design.dagster_run_ids)
        & (pl.col("dataset") == design.dataset)
        & pl.col("config_name").is_in(design.configs)
    ).sort("storage_id", maintain_order=True)
    paths: dict[str, Path] = {}
    cells: dict[tuple[str, str], Path] = {}
    for instance_id, config_name, out in mine.select("instance_id", "config_name", "output_dir").iter_rows():
        cells[(instance_id, config_name)] = paths.get(out) or paths.setdefault(out, Path(out))
    return cells
