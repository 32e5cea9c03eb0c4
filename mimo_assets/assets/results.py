"""results table: every graded partition in one parquet table (polars)."""


from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from mimo_assets.asset_keys import ANALYTICS_GROUP, GRADED_RESULTS, RESULTS_TABLE
from mimo_assets.helpers.stats import to_markdown
from mimo_assets.helpers.table import collect
from resources import OutputStore

RESULTS_PARQUET = "results.parquet"


@asset(key=RESULTS_TABLE, group_name=ANALYTICS_GROUP, deps=[GRADED_RESULTS], kinds={"polars", "parquet"})
def results_table(context: AssetExecutionContext, output_store: OutputStore) -> MaterializeResult:
    df = collect(context.instance)
    path = output_store.tables_dir() / RESULTS_PARQUET
    df.write_parquet(path)
    return MaterializeResult(metadata={
        "path": MetadataValue.path(str(path)),
        "rows": df.height,
        "partitions": df.select("instance_id", "config_name").unique().height,
        "configs": sorted(df["config_name"].unique().to_list()),
        "preview": MetadataValue.md(to_markdown(df.select(
            "instance_id", "config_name", "rollout_index", "exit_status", "reward", "steps", "cost").head(20))),
    })
