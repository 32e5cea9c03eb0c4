"""vLLM's training extras on the scripted chat endpoint: token ids and logprobs, asked for per request.

vLLM answers `logprobs: true` with per-token logprobs (tokens spelt "token_id:N" when the request sets
`return_tokens_as_token_ids`) and `return_token_ids: true` with the prompt's ids (`prompt_token_ids`, top
level) and the completion's (`token_ids`, in the choice). The ids here come from a byte-level stand-in
tokenizer, so they differ with what was said and a test can check them against `ScriptedLLM.sent`.
"""

from __future__ import annotations

import json
from typing import Any


def fake_token_ids(text: str) -> list[int]:
    """A stand-in for a tokenizer: a token per 4 bytes (about what BPE gives on English and code), its id
    from those bytes, so token ids differ with what was said."""
    data = text.encode()
    return [int.from_bytes(data[i : i + 4], "little") % 100_000 + 3 for i in range(0, len(data), 4)]


def _prompt_text(body: dict[str, Any]) -> str:
    return "".join(
        f"<{m.get('role')}>{m.get('content') or ''}{json.dumps(m.get('tool_calls') or '')}"
        for m in body.get("messages", ())
    )


def _completion_text(message: dict[str, Any]) -> str:
    calls = message.get("tool_calls") or ()
    return (message.get("content") or "") + "".join(c["function"]["name"] + c["function"]["arguments"] for c in calls)


def vllm_training_fields(choice: dict[str, Any], out: dict[str, Any], body: dict[str, Any]) -> None:
    """What vLLM adds on request: `logprobs: true` gives per-token logprobs (tokens spelt "token_id:N" with
    `return_tokens_as_token_ids`), `return_token_ids: true` the prompt's and the completion's ids."""
    completion = fake_token_ids(_completion_text(choice["message"]))
    if body.get("logprobs"):
        as_ids = bool(body.get("return_tokens_as_token_ids"))
        choice["logprobs"] = {
            "content": [
                {
                    "token": f"token_id:{t}" if as_ids else f"<{t}>",
                    "logprob": -((t * 7) % 97) / 100,
                    "bytes": None,
                    "top_logprobs": [],
                }
                for t in completion
            ]
        }
    if body.get("return_token_ids"):
        prompt = fake_token_ids(_prompt_text(body))
        choice["token_ids"] = completion
        out["prompt_token_ids"] = prompt
        out["usage"].update(
            prompt_tokens=len(prompt), completion_tokens=len(completion), total_tokens=len(prompt) + len(completion)
        )


def vllm_stream_fields(message: dict[str, Any], body: dict[str, Any]) -> tuple[list[int] | None, dict[str, Any]]:
    """The same for a stream: the prompt's ids (vLLM puts them on the first chunk) and the choice fields
    (`logprobs`, `token_ids`) of the completion, which a stream spreads over its chunks."""
    choice: dict[str, Any] = {"message": message}
    out: dict[str, Any] = {"usage": {}}
    vllm_training_fields(choice, out, body)
    return out.get("prompt_token_ids"), {k: choice[k] for k in ("logprobs", "token_ids") if k in choice}
