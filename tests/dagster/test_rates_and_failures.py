"""One run, read three ways (issue 35): the CLI's end-of-run table and Dagster's tables give the same rates
under the same names (mimo_core.records.rates); the status and usage tables count every rollout of results.jsonl,
infrastructure errors and their cost included; and a failed partition's page, asked through the
webserver's GraphQL exactly as the UI asks it, says why it failed."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from dagster import AssetKey

from mimo_assets.definitions import defs
from mimo_assets.instance.home import get_instance
from mimo_core.records import rates
from mimo_core.records.results import ResultsStore
from testkit.tasks import write_named_config, write_tasks
from tests.dagster.conftest import pk, run_cli
from tests.dagster.test_webserver_ui import _post, webserver  # noqa: F401 (a fixture)

N = 5


def _meta(instance, key: str) -> dict:
    [record] = instance.fetch_materializations(AssetKey(key), limit=1).records
    return {k: v.value for k, v in record.asset_materialization.metadata.items()}


def _cli_table(stdout: str) -> dict[str, dict[str, str]]:
    """The end-of-run table's rows by config, each cell under its column's label."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.startswith("config "))
    head = re.split(r"\s{2,}", lines[start].strip())
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[start + 2 :] if not line.startswith("-")]
    return {row[0]: dict(zip(head, row, strict=True)) for row in rows if len(row) == len(head)}


@pytest.fixture
def one_run(tmp_path: Path, dagster_env, llm) -> dict:
    """A paired CLI run of good and bad over 5 tasks, its first rollouts' model calls refused (503) until
    their retries ran out: model_error, an infrastructure error; recorded, then the analytics refreshed."""
    data = write_tasks(tmp_path / "data", N)
    good, bad = write_named_config(tmp_path, "good"), write_named_config(tmp_path, "bad")
    out = tmp_path / "out"
    llm.inject(503, times=6)  # 3 attempts each: the first two rollouts (1 worker) end in model_error
    proc = run_cli(
        ["-c", str(good), "-c", str(bad), "--paired", "--dataset", str(data), "--workers", "1", "-o", str(out)],
        llm,
        dagster_env,
    )
    instance = get_instance()
    assert defs.resolve_job_def("refresh_analytics").execute_in_process(instance=instance).success
    records = list(ResultsStore(out).load().values())
    assert len(records) == 2 * N and sum(r.infra_error for r in records) == 2, [r.exit_status for r in records]
    return {"instance": instance, "records": records, "stdout": proc.stdout, "data": data, "out": out}


def test_the_cli_and_dagster_report_the_same_rates_under_the_same_names(one_run) -> None:
    cli = _cli_table(one_run["stdout"])
    meta = _meta(one_run["instance"], "pass_rates")
    table = pl.read_parquet(meta["path"])
    shown = meta["table"].splitlines()[0]  # the UI's table: its header
    for ident in (
        rates.ATTEMPTED,
        rates.ERRORS,
        rates.GRADED,
        rates.PASSED,
        rates.PASS_RATE_OF_GRADED,
        rates.PASS_RATE_OF_ATTEMPTED,
    ):
        label = rates.LABELS[ident]
        assert f"| {label} |" in shown, shown
        for config in ("good", "bad"):
            [row] = table.filter(pl.col("config_name") == config).iter_rows(named=True)
            value = row[ident]
            want = rates.percent(value) if "rate" in ident else str(value)
            assert cli[config][label] == want, (config, label, cli[config], row)
    by_config = {c: [r for r in one_run["records"] if r.config_name == c] for c in ("good", "bad")}
    for config, recs in by_config.items():  # and both are the hand count
        c = rates.counts(recs)
        [row] = table.filter(pl.col("config_name") == config).iter_rows(named=True)
        assert (row["attempted"], row["errors"], row["passed"]) == (
            len(recs),
            sum(r.infra_error for r in recs),
            sum(bool(r.passed) for r in recs),
        )
        assert row["pass_rate_of_attempted"] == pytest.approx(c.passed / len(recs))
        assert row["pass_rate_of_graded"] == pytest.approx(c.passed / (len(recs) - c.errors))
    assert sum(r["errors"] for r in table.iter_rows(named=True)) == 2


def test_status_and_usage_tables_sum_to_results_jsonl(one_run) -> None:
    records = one_run["records"]
    instance = one_run["instance"]
    statuses = pl.read_parquet(_meta(instance, "exit_statuses")["path"])
    got = Counter(
        {c: int(statuses[c].sum()) for c in statuses.columns if c not in ("dataset", "run_kind", "config_name")}
    )
    assert got == Counter(str(r.exit_status) for r in records), got
    assert got["model_error"] == 2
    usage = pl.read_parquet(_meta(instance, "usage_by_config")["path"])
    assert int(usage["rollouts"].sum()) == len(records)
    assert float(usage["cost_total"].sum()) == pytest.approx(sum(r.cost for r in records))
    assert int(usage["tokens_total"].sum()) == sum(r.prompt_tokens + r.completion_tokens for r in records)
    assert _meta(instance, "results_table")["rollouts"] == len(records)


PARTITION_QUERY = """
query AssetPartitionDetailQuery($assetKey: AssetKeyInput!, $partitionKey: String!) {
  assetOrError(assetKey: $assetKey) {
    ... on Asset {
      definition { latestRunForPartition(partition: $partitionKey) { id status } }
      assetEventHistory(partitions: [$partitionKey], limit: 1000,
                        eventTypeSelectors: [MATERIALIZATION, OBSERVATION, FAILED_TO_MATERIALIZE]) {
        results {
          __typename
          ... on ObservationEvent { runId description metadataEntries { label
            ... on TextMetadataEntry { text } ... on PathMetadataEntry { path } ... on UrlMetadataEntry { url } } }
          ... on FailedToMaterializeEvent { runId }
          ... on MaterializationEvent { runId }
        }
      }
    }
  }
}
"""


def test_a_failed_partitions_page_says_why(one_run, webserver: str) -> None:  # noqa: F811
    failed = sorted((r for r in one_run["records"] if r.infra_error), key=lambda r: r.config_name)
    for record in failed:
        key = pk(one_run["data"], record.instance_id, record.config_name)
        for asset in ("rollouts", "graded_results"):
            body = json.dumps(
                {
                    "query": PARTITION_QUERY,
                    "operationName": "AssetPartitionDetailQuery",
                    "variables": {"assetKey": {"path": [asset]}, "partitionKey": key},
                }
            ).encode()
            data = json.loads(_post(webserver + "/graphql", body))["data"]["assetOrError"]
            assert data["definition"]["latestRunForPartition"]["status"] == "FAILURE", data
            events = data["assetEventHistory"]["results"]
            [obs] = [e for e in events if e["__typename"] == "ObservationEvent"]
            meta = {m["label"]: m.get("text") or m.get("path") or m.get("url") for m in obs["metadataEntries"]}
            assert meta["status"] == "failed" and meta["error_class"] == "model_error", meta
            assert "model_error" in meta["message"] and "model_error" in obs["description"], meta
            assert meta["output_dir"] == str(one_run["out"].resolve())
            assert meta["rollout_dir"] == str((one_run["out"] / record.output_dir).resolve())
            assert meta["viewer"].endswith("/" + record.output_dir), meta
