"""The instance home: a home created before the storage class moved still opens."""

from __future__ import annotations

from pathlib import Path

import pytest

from mimo_assets.instance.home import POSTGRES_URL_ENV, dagster_home, get_instance, instance_yaml


def test_a_home_whose_yaml_names_the_storage_where_it_used_to_live_is_rewritten_and_opens(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    old = instance_yaml("sqlite", home).replace("mimo_assets.instance.storage", "mimo_assets.helpers.storage")
    (home / "dagster.yaml").write_text(old)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.delenv(POSTGRES_URL_ENV, raising=False)
    assert dagster_home() == home.resolve()
    text = (home / "dagster.yaml").read_text()
    assert "mimo_assets.helpers" not in text and "module: mimo_assets.instance.storage" in text
    with get_instance() as instance:
        assert type(instance.event_log_storage).__name__ == "BatchedSqliteEventLogStorage"
