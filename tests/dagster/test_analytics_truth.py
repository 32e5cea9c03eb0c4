"""Analytics that tell the truth, on a real instance: two datasets sharing instance ids, a gold recalc, a
random-assignment A/B run and a paired run, recorded from real CLI runs; each figure checked against a
hand computation and, where they have the interval, statsmodels."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from mimo_assets.analysis.ab import newcombe_paired
from mimo_assets.definitions import defs
from mimo_assets.partitions import dataset_name
from mimo_core.records.results import ResultsStore
from testkit.scripted_llm import Reply, Request, ScriptedLLM, call
from testkit.tasks import EVAL, write_named_config
from tests.dagster.conftest import EDIT, private_dagster_env, run_cli

N = 12
ANALYTICS = ["results_table", "pass_rates", "pass_at_k", "ab_comparison", "usage_by_config", "exit_statuses"]


def passes(model: str, i: int) -> bool:
    """The scripted models: `good` solves task i unless i % 4 == 0, `bad` only when i % 3 == 0."""
    return i % 4 != 0 if model == "good" else i % 3 == 0


def _by_task(req: Request) -> Reply:
    i = int(re.search(r"\(task (\d+)\)", json.dumps(req.body["messages"][:2])).group(1))
    if req.n_assistant_turns == 0 and passes(req.body.get("model"), i):
        return EDIT
    return call("submit")


def _dataset(folder: Path) -> Path:
    """greet-0..11 with a reference solution (for --recalc-input gt); every dataset uses the same ids."""
    (folder / "repo").mkdir(parents=True)
    (folder / "repo" / "greeting.txt").write_text("hello\n")
    rows = [
        {
            "instance_id": f"greet-{i}",
            "dataset_type": "generic",
            "repo_dir": "repo",
            "eval_script": EVAL,
            "solution_script": "echo goodbye > greeting.txt",
            "problem_statement": f"Make greeting.txt say goodbye (task {i}).",
        }
        for i in range(N)
    ]
    path = folder / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _index(instance_id: str) -> int:
    return int(instance_id.removeprefix("greet-"))


def _meta(instance: DagsterInstance, key: str) -> dict:
    [record] = instance.fetch_materializations(AssetKey(key), limit=1).records
    return {k: v.value for k, v in record.asset_materialization.metadata.items()}


def _run_id(out: Path) -> str:
    [run_id] = {r.run_id for r in ResultsStore(out).load().values()}
    return run_id


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """The three CLI runs, recorded, and the analytics refreshed once (shared by the module's tests)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield _record(tmp_path_factory.mktemp("analytics"), monkeypatch)


def _record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    dagster_env = private_dagster_env(tmp_path, monkeypatch)
    x, y = _dataset(tmp_path / "x"), _dataset(tmp_path / "y")
    good, bad = write_named_config(tmp_path, "good"), write_named_config(tmp_path, "bad")
    out = {name: tmp_path / name for name in ("random", "paired", "gold")}
    with ScriptedLLM(_by_task) as llm:
        both = ["-c", str(good), "-c", str(bad), "--workers", "4"]
        run_cli([*both, "--dataset", str(x), "--seed", "3", "-o", str(out["random"])], llm, dagster_env)
        run_cli([*both, "--dataset", str(y), "--paired", "-o", str(out["paired"])], llm, dagster_env)
        run_cli(
            ["-c", str(good), "--dataset", str(x), "--recalc-input", "gt", "-o", str(out["gold"])], llm, dagster_env
        )
    instance = DagsterInstance.from_config(dagster_env["DAGSTER_HOME"])
    job = defs.resolve_implicit_global_asset_job_def()
    assert job.execute_in_process(instance=instance, asset_selection=[AssetKey(k) for k in ANALYTICS]).success
    drawn = {r.instance_id: r.config_name for r in ResultsStore(out["random"]).load().values()}
    return {
        "instance": instance,
        "x": dataset_name(str(x)),
        "y": dataset_name(str(y)),
        "drawn": drawn,
        "runs": {name: _run_id(folder) for name, folder in out.items()},
        "out": out,
        "job": job,
    }


def _wilson(passed: int, n: int) -> tuple[float, float]:
    lo, hi = proportion_confint(passed, n, alpha=0.05, method="wilson")
    return max(0.0, lo), min(1.0, hi)


def test_pass_rates_are_per_dataset_and_kind_of_run_and_match_a_hand_count(recorded) -> None:
    import polars as pl

    x, y, drawn = recorded["x"], recorded["y"], recorded["drawn"]
    assert set(drawn.values()) == {"good", "bad"} and len(drawn) == N  # one config per instance, both drawn
    expected: dict[tuple[str, str, str], tuple[int, int]] = {}
    for config in ("good", "bad"):
        mine = [_index(i) for i, c in drawn.items() if c == config]
        expected[(x, "rollout", config)] = (sum(passes(config, i) for i in mine), len(mine))
        expected[(y, "rollout", config)] = (sum(passes(config, i) for i in range(N)), N)
    expected[(x, "gold", "good")] = (N, N)  # the reference solution passes everywhere: never pooled with the model
    table = pl.read_parquet(_meta(recorded["instance"], "pass_rates")["path"])
    got = {(r["dataset"], r["run_kind"], r["config_name"]): r for r in table.iter_rows(named=True)}
    assert set(got) == set(expected)
    for key, (passed, n) in expected.items():
        row = got[key]
        assert (row["passed"], row["graded"], row["attempted"], row["errors"]) == (passed, n, n, 0), key
        assert row["pass_rate_of_graded"] == pytest.approx(passed / n) == row["pass_rate_of_attempted"]
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(_wilson(passed, n), abs=1e-12), key
    assert (got[(y, "rollout", "good")]["passed"], got[(y, "rollout", "bad")]["passed"]) == (9, 4)


def test_each_analytics_asset_names_the_runs_and_rollouts_it_was_computed_from(recorded) -> None:
    runs = recorded["runs"]
    everything = sorted(runs.values())
    for key in ("pass_rates", "pass_at_k", "usage_by_config", "exit_statuses"):
        meta = _meta(recorded["instance"], key)
        assert (meta["runs"], meta["rollouts"]) == (everything, 4 * N), key  # 12 + 24 + 12 graded rollouts
    table = _meta(recorded["instance"], "results_table")
    assert table["rows"] == 4 * N and table["run_kinds"] == ["gold", "rollout"]
    ab = _meta(recorded["instance"], "ab_comparison")
    assert ab["runs"] == sorted([runs["random"], runs["paired"]]) and ab["rollouts"] == 3 * N


def test_ab_comparison_reports_each_designed_run_with_its_designs_statistic(recorded) -> None:
    x, y, drawn = recorded["x"], recorded["y"], recorded["drawn"]
    pairs = _meta(recorded["instance"], "ab_comparison")["pairs"]
    by_design = {p["design"]: p for p in pairs}
    assert sorted(by_design) == ["paired", "random"] and len(pairs) == 2  # nothing across runs unless asked

    rnd = by_design["random"]  # the random-assignment run on x: unpaired, on exactly its 12 cells
    assert (rnd["dataset"], rnd["run_kind"], rnd["a"], rnd["b"], rnd["seed"]) == (x, "rollout", "bad", "good", 3)
    assert rnd["runs"] == [recorded["runs"]["random"]] and rnd["method"] == "newcombe"
    counts = {
        c: (sum(passes(c, _index(i)) for i, d in drawn.items() if d == c), sum(d == c for d in drawn.values()))
        for c in ("good", "bad")
    }
    (x_b, n_b), (x_a, n_a) = counts["good"], counts["bad"]
    assert (rnd["n_a"], rnd["n_b"], rnd["shared_instances"]) == (n_a, n_b, 0)
    assert rnd["difference"] == pytest.approx(x_b / n_b - x_a / n_a)
    ref = confint_proportions_2indep(x_b, n_b, x_a, n_a, method="newcomb", compare="diff")
    assert (rnd["ci_low"], rnd["ci_high"]) == pytest.approx(tuple(map(float, ref)), abs=1e-9)

    paired = by_design["paired"]  # the paired run on y: 12 matched pairs, though x has the same ids
    assert (paired["dataset"], paired["run_kind"], paired["shared_instances"]) == (y, "rollout", N)
    assert paired["runs"] == [recorded["runs"]["paired"]] and paired["method"] == "newcombe-paired"
    # by hand: both pass at 3, 6, 9; only good at 1, 2, 5, 7, 10, 11; only bad at 0; neither at 4, 8
    assert paired["difference"] == pytest.approx((9 - 4) / N)
    assert paired["flipped_to_pass"] == sorted(f"greet-{i}" for i in (1, 2, 5, 7, 10, 11))
    assert paired["flipped_to_fail"] == ["greet-0"]
    _, lo, hi = newcombe_paired(both=3, b_only=6, a_only=1, neither=2)
    assert (paired["ci_low"], paired["ci_high"]) == pytest.approx((lo, hi)) and -1 <= lo < 5 / 12 < hi <= 1
    unpaired = confint_proportions_2indep(9, N, 4, N, method="newcomb", compare="diff")
    assert hi - lo < float(unpaired[1] - unpaired[0])  # the pairing is information the unpaired figure lacks


def test_a_comparison_across_runs_is_made_only_when_asked_and_says_so(recorded) -> None:
    x, y = recorded["x"], recorded["y"]
    run = {"ops": {"ab_comparison": {"config": {"across_runs": ["good,bad"]}}}}
    assert (
        recorded["job"]
        .execute_in_process(instance=recorded["instance"], asset_selection=[AssetKey("ab_comparison")], run_config=run)
        .success
    )
    pairs = _meta(recorded["instance"], "ab_comparison")["pairs"]
    across = {(p["dataset"], p["run_kind"]): p for p in pairs if p["design"].startswith("across runs")}
    assert set(across) == {(x, "rollout"), (y, "rollout")}  # x's gold recalc has no `bad` side: nothing to compare
    assert across[(x, "rollout")]["design"] == "across runs: unpaired"
    assert across[(y, "rollout")]["design"] == "across runs: paired"
    assert len([p for p in pairs if p["design"] in ("random", "paired")]) == 2  # the designed ones are still there
