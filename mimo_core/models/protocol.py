"""What the three protocol modules share: kwargs splitting, the query loop with retries, cost, JSON bodies.

Each protocol builds its JSON body by hand and posts it through its SDK client's low-level `post()`:
the SDKs' `create()` re-walks every message on every call (quadratic over a rollout), which is most of
a peer framework's CPU per step. Auth, base URL and headers still come from the official SDK; its HTTP
transport is ours (`call_limits.py`), so the request timeout bounds the whole response and a cancel
closes the connection.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from mimo_core.base.redaction import register
from mimo_core.config import ModelConfig, PricingConfig
from mimo_core.errors import ModelError, ModelInterrupted
from mimo_core.models.base import ModelResponse, Usage
from mimo_core.models.body_text import BodyEncoder, WireLists
from mimo_core.models.call_limits import bounded, bounded_client_kwargs
from mimo_core.models.endpoint import host_of
from mimo_core.models.endpoint_budget import budget_for
from mimo_core.models.interruptible import Cancelled, call_interruptibly
from mimo_core.models.messages import Message, ToolSchema
from mimo_core.models.retry import UnusableReply, call_with_retry, http_status, retry_after
from mimo_core.models.secrets import client_secrets, scrub
from mimo_core.models.tool_args import tool_choice_for

# Keys that configure the SDK client rather than the request body (and never enter `request`).
CLIENT_KEYS = frozenset(
    {
        "base_url",
        "api_key",
        "timeout",
        "default_headers",
        "default_query",
        "organization",
        "project",
        "auth_token",
        "http_client",
        "websocket_base_url",
    }
)

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def split_kwargs(cfg: ModelConfig, sdk: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split `model_kwargs` into SDK-client kwargs and request-body kwargs. The client gets the bounded
    HTTP transport (call_limits.py) unless the config brings its own `http_client`."""
    client = {k: v for k, v in cfg.model_kwargs.items() if k in CLIENT_KEYS}
    request = {k: v for k, v in cfg.model_kwargs.items() if k not in CLIENT_KEYS}
    client.setdefault("timeout", cfg.retry.timeout)
    client["max_retries"] = 0  # we retry ourselves, with our own policy and attempt count
    if "http_client" not in client:
        client.update(bounded_client_kwargs(sdk))
    return client, request


def compute_cost(usage: Usage, pricing: PricingConfig | None) -> float:
    """Dollars for one call's usage (docs/models.md, "Costs"): each kind of token at its rate, a rate not
    given at the plain one's (cache reads and writes at `input`, reasoning at `output`)."""
    if pricing is None:
        return 0.0

    def rate(value: float | None, plain: float) -> float:
        return value if value is not None else plain

    cached = min(usage.cached_tokens, usage.prompt_tokens)
    written = min(usage.cache_write_tokens, usage.prompt_tokens - cached)
    reasoning = min(usage.reasoning_tokens, usage.completion_tokens)
    dollars_per_m = (
        (usage.prompt_tokens - cached - written) * pricing.input
        + cached * rate(pricing.cached_input, pricing.input)
        + written * rate(pricing.cache_write, pricing.input)
        + (usage.completion_tokens - reasoning) * pricing.output
        + reasoning * rate(pricing.reasoning, pricing.output)
    )
    return dollars_per_m / 1e6


def as_int(value: Any) -> int:
    return value if isinstance(value, int) else 0


class ProtocolModel:
    """The query loop every protocol shares; subclasses provide the body, the post and the parse."""

    protocol: str = ""
    path: str = ""
    output_cap_key: str = ""  # this protocol's name for the output-token cap

    def __init__(self, cfg: ModelConfig, client: Any, request_kwargs: dict[str, Any]):
        # `max_output_tokens` is the cap in every protocol's profile; each sends it under its own name.
        if "max_output_tokens" in request_kwargs and self.output_cap_key != "max_output_tokens":
            request_kwargs = dict(request_kwargs)
            cap = request_kwargs.pop("max_output_tokens")
            request_kwargs.setdefault(self.output_cap_key, cap)
        if "tool_choice" in request_kwargs:
            request_kwargs = {
                **request_kwargs,
                "tool_choice": tool_choice_for(self.protocol, request_kwargs["tool_choice"]),
            }
        self.cfg = cfg
        self.name = cfg.model_name
        self.body_encoder = BodyEncoder()
        self.wire_lists = WireLists()
        self.client = client
        self.request_kwargs = request_kwargs
        self.endpoint_host = host_of(client.base_url)
        self.secrets = client_secrets(client)
        self.budget = budget_for(cfg)  # shared with every rollout calling the same endpoint
        register(self.secrets)  # every writer redacts them from now on

    def build_body(self, messages: list[Message], tools: list[ToolSchema]) -> dict[str, Any]:
        raise NotImplementedError

    def parse(self, data: dict[str, Any], out: ModelResponse) -> None:
        """Fill `out` (message, usage, finish_reason, token ids, logprobs) from the raw response body."""
        raise NotImplementedError

    def problem(self, data: dict[str, Any]) -> str | None:
        """Why a 200 body is not a reply of this protocol (None: it is one)."""
        raise NotImplementedError

    def _post(self, payload: bytes, cancel: threading.Event | None = None) -> Any:
        """The whole response within `retry.timeout`, and the connection closed at `cancel` (call_limits)."""
        with bounded(self.cfg.retry.timeout, cancel):
            return self.client.post(self.path, content=payload, cast_to=object)

    def _usable(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            snippet = scrub(str(data)[:200], self.secrets)
            raise UnusableReply(f"HTTP 200 but the body is not JSON: {snippet!r}")
        why = self.problem(data)
        if why is not None:
            raise UnusableReply(f"HTTP 200 but {why}: {scrub(_dumps(data)[:200], self.secrets)}")
        return data

    def _post_interruptibly(self, payload: bytes, cancel: threading.Event | None) -> dict[str, Any]:
        """With `cancel`, the post runs on a helper thread while this one watches the event: a Ctrl-C need
        not wait for the request timeout."""
        if cancel is None:
            return self._usable(self._post(payload))
        try:
            return self._usable(call_interruptibly(lambda: self._post(payload, cancel), cancel))
        except Cancelled:
            raise ModelInterrupted(f"model {self.name}: interrupted during a call") from None

    def query(
        self, messages: list[Message], tools: list[ToolSchema], cancel: threading.Event | None = None
    ) -> ModelResponse:
        body = self.build_body(messages, tools)
        text = self.body_encoder.encode(body)
        payload = text.encode()
        start = time.perf_counter()
        budget, tickets = self.budget, []
        estimate = len(payload) // 4  # tokens, roughly, until the endpoint says (tokens_per_minute)

        def attempt() -> dict[str, Any]:
            """One attempt holds one slot of the endpoint's budget, given back with how it went."""
            ticket = budget.acquire((cancel,), estimate)
            tickets.append(ticket)
            try:
                data = self._post_interruptibly(payload, cancel)
            except BaseException as e:
                budget.release(ticket, http_status(e), retry_after(e))
                raise
            budget.release(ticket)
            return data

        try:
            data, attempts = call_with_retry(
                attempt,
                self.cfg.retry,
                self.name,
                secrets=self.secrets,
                cancel=cancel,
            )
        except ModelError as e:
            e.request, e.request_json = body, text
            raise
        waited = sum(t.waited_s for t in tickets)
        out = ModelResponse.model_construct(
            message=Message(role="assistant"),
            usage=Usage(),
            latency_s=time.perf_counter() - start - waited,
            cost=0.0,
            attempts=attempts,
            wait_s=round(waited, 4),
            finish_reason=None,
            token_ids=None,
            prompt_token_ids=None,
            logprobs=None,
            request=body,
            response=data,
            request_json=text,
        )
        self.parse(data, out)
        budget.charge(out.usage.total_tokens, tickets[-1])
        out.cost = compute_cost(out.usage, self.cfg.pricing)
        return out
