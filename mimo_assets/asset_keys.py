"""Every asset key and asset group of the code location, named once.

Materializations are also logged by hand (a CLI run is recorded from its own process), so the keys are
shared by the asset definitions and the code that builds events for them.
"""

from dagster import AssetKey

INPUTS_GROUP = "inputs"
ROLLOUTS_GROUP = "rollouts"
ANALYTICS_GROUP = "analytics"
EXPORTS_GROUP = "exports"

DATASET_ROWS = AssetKey("dataset_rows")
CONVERTED_JSONL = AssetKey("converted_jsonl")
CONFIG_FILES = AssetKey("config_files")

ROLLOUTS = AssetKey("rollouts")
JUDGE_SCORES = AssetKey("judge_scores")
GRADED_RESULTS = AssetKey("graded_results")

RESULTS_TABLE = AssetKey("results_table")
PASS_RATES = AssetKey("pass_rates")
PASS_AT_K = AssetKey("pass_at_k")
AB_COMPARISON = AssetKey("ab_comparison")
USAGE_BY_CONFIG = AssetKey("usage_by_config")
EXIT_STATUSES = AssetKey("exit_statuses")
PASS_RATE_TREND = AssetKey("pass_rate_trend")

SFT_EXPORT = AssetKey("sft_export")
RL_EXPORT = AssetKey("rl_export")
ATIF_EXPORT = AssetKey("atif_export")
