"""Training exports of a scripted run: sft and rl parquet (read by datasets and polars), atif files
(validated by Harbor's own model), filters, and the rollouts without token ids named in the report."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from mimo_core.exports.source import ExportFilter, select_latest
from mimo_core.exports.write import EmptyExport, run_export, write_export
from mimo_core.status import ExitStatus
from testkit.harbor_atif import harbor_atif_errors
from tests.exports.conftest import ScriptedRun


def _load_hf(path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch):
    import datasets

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")  # local files only: nothing may be downloaded
    return datasets.load_dataset("parquet", data_files=str(path), split="train", cache_dir=str(cache))


def test_sft_export_has_one_row_per_rollout_in_chat_format(
    scripted_run: ScriptedRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = run_export("sft", [scripted_run.out], tmp_path)
    assert report.rollouts == 4 and not report.skipped
    ds = _load_hf(tmp_path / "sft.parquet", tmp_path / "hf", monkeypatch)
    assert len(ds) == 4
    row = next(r for r in ds if r["instance_id"] == "greet-0" and r["config_name"] == "tok")
    assert row["reward"] == 1.0 and row["exit_status"] == "submitted" and row["passed"] is True
    roles = [m["role"] for m in row["messages"]]
    assert roles[:2] == ["system", "user"] and "assistant" in roles and "tool" in roles
    edit = next(m for m in row["messages"] if m["role"] == "assistant")["tool_calls"][0]
    assert edit["function"]["name"] == "edit" and json.loads(edit["function"]["arguments"])["path"] == "greeting.txt"
    tools = json.loads(row["tools"])
    assert {t["function"]["name"] for t in tools} >= {"bash", "edit", "submit"}
    assert tools[0]["type"] == "function" and "parameters" in tools[0]["function"]
    df = pl.read_parquet(tmp_path / "sft.parquet")
    assert df.height == 4 and isinstance(df.schema["messages"], pl.List)
    assert df.filter(pl.col("config_name") == "tok")["reward"].to_list() == [1.0, 1.0]


def test_sft_filters_keep_matching_rollouts(scripted_run: ScriptedRun, tmp_path: Path) -> None:
    assert run_export("sft", [scripted_run.out], tmp_path / "a", ExportFilter(configs=["plain"])).rollouts == 2
    assert run_export("sft", [scripted_run.out], tmp_path / "b", ExportFilter(min_reward=1.0)).rollouts == 4
    with pytest.raises(EmptyExport, match="nothing to export"):  # a 0-row parquet is what loaders choke on
        run_export("sft", [scripted_run.out], tmp_path / "c", ExportFilter(statuses=[ExitStatus.STEP_LIMIT]))
    assert not (tmp_path / "c" / "sft.parquet").exists() and (tmp_path / "c" / "sft_report.json").exists()


def test_rl_export_has_the_token_ids_the_server_sent(
    scripted_run: ScriptedRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = run_export("rl", [scripted_run.out], tmp_path)
    assert report.rollouts == 2 and report.rows == 4  # the tok rollouts, two calls each
    skipped = {Path(s.rollout).relative_to(scripted_run.out).as_posix(): s.reason for s in report.skipped}
    assert set(skipped) == {"greet-0/plain/0", "greet-1/plain/0"}  # no token ids: named, not dropped silently
    assert all("lack token ids" in r and "prompt token ids and completion token ids" in r for r in skipped.values())
    saved = json.loads((tmp_path / "rl_report.json").read_text())
    assert len(saved["skipped"]) == 2

    ds = _load_hf(tmp_path / "rl.parquet", tmp_path / "hf", monkeypatch)
    sent = [s for s in scripted_run.llm.sent if "prompt_token_ids" in s]
    assert len(sent) == 4
    first = ds.filter(lambda r: r["call_index"] == 0 and r["instance_id"] == "greet-0")[0]
    # greet-0/tok ran first (one worker, instances in order, tok before plain): its first call is sent[0]
    assert first["prompt_token_ids"] == sent[0]["prompt_token_ids"]
    assert first["completion_token_ids"] == sent[0]["choices"][0]["token_ids"]
    assert first["completion_logprobs"] == pytest.approx(
        [e["logprob"] for e in sent[0]["choices"][0]["logprobs"]["content"]]
    )
    n_prompt, n_completion = len(first["prompt_token_ids"]), len(first["completion_token_ids"])
    assert first["loss_mask"] == [0] * n_prompt + [1] * n_completion
    assert first["reward"] == 1.0 and first["config_name"] == "tok"
    df = pl.read_parquet(tmp_path / "rl.parquet")
    assert df.height == 4 and set(df["config_name"]) == {"tok"}


def test_atif_export_validates_against_harbors_model(scripted_run: ScriptedRun, tmp_path: Path) -> None:
    report = run_export("atif", [scripted_run.out], tmp_path)
    files = sorted((tmp_path / "atif").rglob("*.json"))
    assert report.rollouts == 4 and len(files) == 4
    assert harbor_atif_errors(files) == {}
    atif = json.loads((tmp_path / "atif" / "greet-0" / "tok" / "0.json").read_text())
    assert [s["source"] for s in atif["steps"][:3]] == ["system", "user", "agent"]
    agent = atif["steps"][2]
    assert agent["tool_calls"][0]["function_name"] == "edit" and agent["tool_calls"][0]["arguments"]["path"]
    result = agent["observation"]["results"][0]
    assert result["source_call_id"] == agent["tool_calls"][0]["tool_call_id"]
    assert agent["metrics"]["completion_token_ids"] == scripted_run.llm.sent[0]["choices"][0]["token_ids"]
    assert atif["extra"]["reward"] == 1.0 and atif["final_metrics"]["total_steps"] == len(atif["steps"])
    # a broken file is refused by Harbor's model: the check can fail
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({**atif, "steps": [{**atif["steps"][0], "step_id": 5}]}))
    assert list(harbor_atif_errors([broken])) == [str(broken)]


def test_return_token_ids_on_another_protocol_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mimo_core.config import read_configs
    from mimo_core.errors import ConfigError
    from testkit.tasks import write_config

    monkeypatch.setenv("MIMO_TEST_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MIMO_TEST_API_KEY", "k")
    cfg = write_config(tmp_path, "resp", protocol="responses")
    cfg.write_text(cfg.read_text().replace("model_name:", "return_token_ids: true\n  model_name:"))
    with pytest.raises(ConfigError) as exc:
        read_configs([str(cfg)])
    assert "return_token_ids needs protocol: chat" in str(exc.value) and str(cfg) in str(exc.value)
    assert len(str(exc.value).splitlines()) == 1


def test_latest_partitions_skip_a_run_folder_that_is_gone(scripted_run: ScriptedRun, tmp_path: Path) -> None:
    """The export assets' selection: each partition from its latest run folder; a deleted folder is reported."""
    latest = {
        ("greet-0", "tok"): scripted_run.out,
        ("greet-1", "plain"): scripted_run.out,
        ("greet-9", "tok"): tmp_path / "deleted-run",
    }
    refs, unreadable = select_latest(latest)
    assert [(r.record.instance_id, r.record.config_name) for r in refs] == [("greet-0", "tok"), ("greet-1", "plain")]
    assert list(unreadable) == [str((tmp_path / "deleted-run").resolve())]
    report = write_export("sft", refs, tmp_path / "exp", unreadable)
    assert report.rollouts == 2 and [s.rollout for s in report.skipped] == list(unreadable)
    assert "not a folder" in report.skipped[0].reason
