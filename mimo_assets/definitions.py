"""The mimoagent code location: `dagster dev -w workspace.yaml` loads this module."""

from __future__ import annotations

from dagster import Definitions, ResourceDefinition

from mimo_assets.assets.analytics import (
    ab_comparison,
    exit_statuses,
    pass_at_k,
    pass_rate_trend,
    pass_rates,
    usage_by_config,
)
from mimo_assets.assets.datasets import config_files, load_dataset
from mimo_assets.assets.exports import atif_export, rl_export, sft_export
from mimo_assets.assets.results import TABLES_IO_MANAGER, results_table
from mimo_assets.assets.rollouts import rollouts
from mimo_assets.checks import no_missing_partitions, rewards_in_range, trajectories_validate
from mimo_assets.cli_recording.job import cli_run_job
from mimo_assets.jobs import analytics_job, evaluate_job, register_configs_job
from mimo_assets.rerun import rerun_cells_job, rerun_failed_in_chunks, rerun_failed_job
from mimo_assets.schedules import nightly_eval
from mimo_assets.sensors import analytics_after_new_results, cli_runs_to_record, new_config_files
from resources import BatchRunner, ModelEndpoint, OutputStore, SandboxBackend
from resources.tables_io_manager import TablesIOManager

defs = Definitions(
    assets=[
        load_dataset,
        config_files,
        rollouts,
        results_table,
        pass_rates,
        pass_at_k,
        ab_comparison,
        usage_by_config,
        exit_statuses,
        pass_rate_trend,
        sft_export,
        rl_export,
        atif_export,
    ],
    asset_checks=[trajectories_validate, rewards_in_range, no_missing_partitions],
    jobs=[evaluate_job, cli_run_job, analytics_job, register_configs_job, rerun_failed_job, rerun_cells_job],
    schedules=[nightly_eval],
    sensors=[cli_runs_to_record, new_config_files, analytics_after_new_results, rerun_failed_in_chunks],
    resources={
        # Endpoint, key and sandbox settings as Dagster EnvVars: the UI names the variables, never their values.
        "output_store": OutputStore(),
        "model_endpoint": ModelEndpoint.from_env(),
        "sandbox_backend": SandboxBackend.from_env(),
        "batch_runner": BatchRunner(),  # thread pool or Ray cluster (docs/ray.md)
        TABLES_IO_MANAGER: TablesIOManager(output_store=OutputStore()),  # the results table as a DataFrame
        # Set only in a process that holds a CLI run's records (cli_recording.execute.execute_feed).
        "cli_feed": ResourceDefinition.none_resource(description="a CLI run's finished records, when recording one"),
    },
)
