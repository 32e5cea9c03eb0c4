"""The partition status bar a user reads in the Dagster UI, through a real browser, counts exactly what the
event log holds: bench/bench_dagster_ui.py's synthetic runs (the events our recording logs, straight into
storage) at 2,000 partitions, materialized, failed and missing scattered among them; the status of
`rollouts` built ahead of the view as the analytics refresh builds it (dagster_private.warm_partition_status),
that of `graded_results` by the webserver itself. The bench measures the same page at 100,000."""

from __future__ import annotations

from pathlib import Path

from bench.bench_dagster_ui import shown_counts, webserver, write_synthetic
from mimo_assets.asset_keys import JUDGE_SCORES, ROLLOUTS
from mimo_assets.dagster_private import warm_partition_status
from mimo_assets.instance.home import get_instance
from mimo_assets.partitions import rollout_partitions
from testkit.cdp import Browser


def test_the_partitions_pages_count_what_was_written(tmp_path: Path, dagster_env: dict[str, str]) -> None:
    instance = get_instance()
    written = write_synthetic(instance, 1000, fail_every=7, missing_every=11, run_dir=tmp_path / "run")
    assert warm_partition_status(instance, [ROLLOUTS, JUDGE_SCORES], rollout_partitions) == [ROLLOUTS]
    assert warm_partition_status(instance, [ROLLOUTS], rollout_partitions) == []  # up to date: nothing to do
    expected = written.expected()
    assert expected == {"Partitions": 2000, "Materialized": 1559, "Failed": 260, "Missing": 181}
    home = Path(dagster_env["DAGSTER_HOME"])
    with webserver(home, tmp_path / "webserver.log", dagster_env) as (url, _), Browser() as browser:
        _, rollouts = shown_counts(browser, f"{url}/assets/rollouts?view=partitions")
        _, graded = shown_counts(browser, f"{url}/assets/graded_results?view=partitions")
        _, judge = shown_counts(browser, f"{url}/assets/judge_scores?view=partitions")
    assert rollouts == expected
    assert graded == expected
    assert judge == {**expected, "Materialized": 0, "Failed": 0, "Missing": 2000}  # no judge ran
