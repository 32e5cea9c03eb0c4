"""`evaluate_fanout` in process (what its step pods do, one after another): every chunk evaluates its
slice into its own folder, and together they cover the selection once."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance

from testkit.tasks import write_named_config, write_tasks


@pytest.fixture
def instance(dagster_env, llm, monkeypatch: pytest.MonkeyPatch) -> DagsterInstance:
    monkeypatch.setenv("MIMO_TEST_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("MIMO_TEST_API_KEY", "k")
    from mimo_assets.instance.home import get_instance

    return get_instance()


def test_fanout_chunks_cover_the_selection_once_each_in_its_folder(tmp_path: Path, instance) -> None:
    from mimo_assets.definitions_k8s import defs

    data, good = write_tasks(tmp_path, 3), write_named_config(tmp_path, "good")
    evaluate = {"dataset": str(data), "configs": [str(good)], "workers": 2, "output_dir": str(tmp_path / "out")}
    run = {
        "ops": {
            "chunk_slices": {"config": {"rows": 5, "chunk_size": 2}},  # rows past the end: last chunk empty
            "evaluate_chunk": {"config": evaluate},
        }
    }
    result = defs.resolve_job_def("evaluate_fanout").execute_in_process(instance=instance, run_config=run)
    assert result.success
    out = tmp_path / "out"
    chunks = {p.name: sorted(q.name for q in p.iterdir() if q.is_dir()) for p in out.iterdir()}
    assert chunks == {"chunk_0000": ["greet-0", "greet-1"], "chunk_0001": ["greet-2"]}  # chunk_0002: no rows
    graded = instance.fetch_materializations(AssetKey("graded_results"), limit=100).records
    assert len(graded) == 3 and len({r.partition_key for r in graded}) == 3  # three instances, none twice
    run["ops"]["evaluate_chunk"]["config"]["slice"] = "0:1"
    bad = defs.resolve_job_def("evaluate_fanout").execute_in_process(
        instance=instance, run_config=run, raise_on_error=False
    )
    assert not bad.success and "the chunks are the slices" in str(bad.failure_data_for_node("evaluate_chunk").error)
