"""A test whose host needs are missing is skipped on a developer's machine and fails in CI."""

from __future__ import annotations

import pytest

from tests.host_needs import unavailable


def test_a_missing_need_skips_on_a_developer_machine_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"^no widget$"):
        unavailable("no widget")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"^no widget \(CI=true: "):
        unavailable("no widget")
