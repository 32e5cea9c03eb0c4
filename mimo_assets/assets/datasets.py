"""dataset rows → converted JSONL, and the registered config files: the inputs of every rollout."""

from collections.abc import Iterator
from pathlib import Path

from dagster import AssetExecutionContext, AssetMaterialization, AssetSpec, Config, multi_asset
from pydantic import Field

from mimo_assets.asset_keys import CONFIG_FILES, CONVERTED_JSONL, DATASET_ROWS, INPUTS_GROUP
from mimo_assets.eventlog.events import run_tags
from mimo_assets.inputs import config_events, dataset_events, registered_configs, yaml_files
from mimo_assets.partitions import dataset_name, register_planned
from mimo_core.settings import CodeLocationSettings
from resources import OutputStore


class DatasetConfig(Config):
    source: str = Field(default="", description="JSONL/parquet/Harbor folder/HF name; default $MIMOAGENT_DATASET")
    split: str | None = None
    plan_configs: list[str] = Field(
        default_factory=list,
        description="registered config names to plan every row for (partitions to backfill "
        "from the UI); none: loading plans nothing, so nothing shows as missing",
    )


@multi_asset(
    specs=[
        AssetSpec(
            DATASET_ROWS,
            group_name=INPUTS_GROUP,
            skippable=True,
            kinds={"python"},
            description="The benchmark's rows as published (a file, a Harbor folder or a HF dataset).",
        ),
        AssetSpec(
            CONVERTED_JSONL,
            deps=[DATASET_ROWS],
            group_name=INPUTS_GROUP,
            skippable=True,
            kinds={"json"},
            description="Validated mimoagent JSONL. Loading it here with `plan_configs` plans one "
            "`config|dataset/instance` partition per row and config (to backfill from the "
            "UI); CLI and evaluate runs plan the cells they run.",
        ),
    ],
    name="load_dataset",
)
def load_dataset(
    context: AssetExecutionContext,
    config: DatasetConfig,
    output_store: OutputStore,
) -> Iterator[AssetMaterialization]:
    from mimo_core.datasets.loader import load_tasks

    source = config.source or CodeLocationSettings.read().dataset
    if not source:
        raise ValueError("load_dataset: set `source` in the run config or $MIMOAGENT_DATASET")
    registered = registered_configs(context.instance)
    unknown = [c for c in config.plan_configs if c not in registered]
    if unknown:
        raise ValueError(
            f"load_dataset: plan_configs {unknown} are not registered configs "
            f"({sorted(registered) or 'none yet: materialize config_files first'})"
        )
    tasks = load_tasks(source, config.split)
    context.log.info(f"{len(tasks)} rows from {source}")
    yield from dataset_events(
        context.instance, tasks, source, config.split, output_store.datasets_dir(), run_tags(), force=True
    )
    cells = register_planned(
        context.instance,
        dataset_name(source, config.split),
        [(t.instance_id, c) for t in tasks for c in config.plan_configs],
    )
    context.log.info(f"planned {len(cells)} new partitions: {len(tasks)} rows × {config.plan_configs or 'no config'}")


class ConfigFilesConfig(Config):
    paths: list[str] = Field(default_factory=list, description="config files to register")
    directory: str = Field(default="", description="register every *.yaml here (default $MIMOAGENT_CONFIG_DIR)")


@multi_asset(
    specs=[
        AssetSpec(
            CONFIG_FILES,
            group_name=INPUTS_GROUP,
            skippable=True,
            kinds={"yaml"},
            description="Registered config files (name → path). `load_dataset` plans its rows for "
            "the ones named in its `plan_configs`; CLI and evaluate runs plan their own.",
        )
    ],
    name="config_files",
)
def config_files(context: AssetExecutionContext, config: ConfigFilesConfig) -> Iterator[AssetMaterialization]:
    """Every registered config file (name → path). Registering plans nothing: a config becomes partitions
    when a run plans it, or when `load_dataset` is given it in `plan_configs`."""
    paths = list(config.paths) + yaml_files(config.directory or CodeLocationSettings.read().config_dir)
    paths += [p for p in registered_configs(context.instance).values() if Path(p).exists()]
    yield from config_events(context.instance, list(dict.fromkeys(paths)), run_tags(), force=True)
