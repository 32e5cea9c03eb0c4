"""Project-wide fixtures. Keep this file tiny: subfolders hold their own conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mimo_core.testing.scripted_llm import ScriptedLLM, call, turns


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    """A started scripted endpoint whose model just calls `submit`; tests script it with `.set_responder`."""
    with ScriptedLLM(turns(call("submit"))) as server:
        yield server
