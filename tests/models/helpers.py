"""Build real SDK-backed models pointed at a ScriptedLLM, with retry delays small enough for tests."""

from __future__ import annotations

from typing import Any

from mimo_core.config import ModelConfig, PricingConfig, RetryConfig
from mimo_core.models.factory import make_model
from mimo_core.models.messages import Message, ToolSchema
from testkit.scripted_llm import ScriptedLLM

API_KEY = "sk-test-secret-key-123"
PROTOCOLS = ["chat", "responses", "anthropic"]
BASH = ToolSchema(
    name="bash",
    description="Run a shell command.",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)


def model_for(
    server: ScriptedLLM,
    protocol: str,
    retry: RetryConfig | None = None,
    pricing: PricingConfig | None = None,
    **kwargs: Any,
):
    base_url = server.url if protocol == "anthropic" else server.openai_base_url
    cfg = ModelConfig(
        model_name="scripted-model",
        protocol=protocol,
        model_kwargs={"base_url": base_url, "api_key": API_KEY, **kwargs},
        retry=retry or RetryConfig(max_attempts=4, initial_delay=0.01, max_delay=0.05, timeout=5.0),
        pricing=pricing,
    )
    return make_model(cfg)


def start_messages() -> list[Message]:
    return [Message(role="system", content="You are a test agent."), Message(role="user", content="List files.")]
