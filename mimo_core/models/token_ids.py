"""Token ids of a Chat Completions reply, from whichever server family sent them (docs/exports.md).

Each family spells them its own way; all are recognised from the response itself, so one config works
against any of them:

- vLLM: the choice's `token_ids` and the top-level `prompt_token_ids` (`return_token_ids`, vLLM >= 0.10.2);
  without it, completion ids from logprob tokens spelt `token_id:N` (`return_tokens_as_token_ids`).
- SGLang: the choice's `prompt_token_ids` (`return_prompt_token_ids`), `token_ids` (`return_token_ids`),
  and `meta_info.output_token_logprobs` (`return_meta_info` + `logprobs`): `[logprob, token_id, text]`
  per sampled token (the text is null without `return_text_in_logprobs`); `output_ids` where a router
  passes SGLang's native fields on.
- llama.cpp: each `logprobs.content[i].id`; it returns no prompt ids, so the chat model asks the same
  server for them (`/apply-template` with the same body, then `/tokenize`) and keeps the answer beside
  the response as `_prompt_token_ids` (checked against the reply's `usage.prompt_tokens`).

This module imports nothing heavy: the `rl` export reads agent_msgs/ through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# What a reply carrying our own additions says (keys no server sends: they start with "_").
PROMPT_IDS_KEY = "_prompt_token_ids"
PROMPT_IDS_ERROR_KEY = "_prompt_token_ids_error"

# `model.return_token_ids: true` sends these in every chat request (model_kwargs win). Each server ignores
# the fields of the others: vLLM (return_token_ids, return_tokens_as_token_ids), SGLang
# (return_prompt_token_ids, return_token_ids, return_meta_info), llama.cpp (logprobs: ids per token).
TOKEN_ID_KWARGS: dict[str, Any] = {
    "logprobs": True,
    "return_tokens_as_token_ids": True,
    "return_token_ids": True,
    "return_prompt_token_ids": True,
    "return_meta_info": True,
}


@dataclass
class TokenFields:
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    logprobs: list[float] | None = None
    server: str | None = None  # the family the ids were recognised as: vllm | sglang | llama.cpp
    prompt_error: str | None = None  # why prompt ids are absent, when we know

    def missing(self) -> list[str]:
        """The pieces a training row needs that this reply lacks."""
        return [
            name
            for name, v in (("prompt token ids", self.prompt_ids), ("completion token ids", self.completion_ids))
            if v is None
        ]


def _ints(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return value
    return None


def _from_vllm_tokens(entries: list[dict[str, Any]]) -> list[int] | None:
    ids = []
    for e in entries:
        token = e.get("token")
        if not isinstance(token, str) or not token.startswith("token_id:"):
            return None
        try:
            ids.append(int(token[9:]))
        except ValueError:
            return None
    return ids


def _from_entry_ids(entries: list[dict[str, Any]]) -> list[int] | None:
    ids = [e.get("id") for e in entries]
    return _ints(ids)


def _sglang_logprobs(meta: dict[str, Any]) -> tuple[list[int] | None, list[float] | None]:
    rows = meta.get("output_token_logprobs")
    if not isinstance(rows, list) or not rows:
        return None, None
    ids, lps = [], []
    for row in rows:
        if not isinstance(row, (list, tuple)) or len(row) < 2 or not isinstance(row[1], int):
            return None, None
        ids.append(row[1])
        lps.append(float(row[0]) if isinstance(row[0], (int, float)) else 0.0)
    return ids, lps


def is_llama_cpp(data: dict[str, Any]) -> bool:
    """llama.cpp's server adds `timings` to every reply; no other family does."""
    return isinstance(data.get("timings"), dict)


def token_fields(data: dict[str, Any]) -> TokenFields:
    """The training extras of one chat reply (each None when not sent)."""
    out = TokenFields()
    choices = data.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    entries = (choice.get("logprobs") or {}).get("content") if isinstance(choice.get("logprobs"), dict) else None
    entries = entries if isinstance(entries, list) and all(isinstance(e, dict) for e in entries) else None
    meta = choice.get("meta_info")
    if not isinstance(meta, dict):
        meta = {}

    if entries:
        out.logprobs = [float(e.get("logprob", 0.0)) for e in entries]
    sg_ids, sg_lps = _sglang_logprobs(meta)
    if out.logprobs is None and sg_lps is not None:
        out.logprobs = sg_lps

    for ids, server in (
        (_ints(choice.get("token_ids")), "sglang" if meta or "prompt_token_ids" in choice else "vllm"),
        (sg_ids, "sglang"),
        (_ints(choice.get("output_ids")) or _ints(data.get("output_ids")), "sglang"),
        (_from_entry_ids(entries) if entries else None, "llama.cpp"),
        (_from_vllm_tokens(entries) if entries else None, "vllm"),
    ):
        if ids is not None:
            out.completion_ids, out.server = ids, server
            break

    for ids, server in (
        (_ints(data.get("prompt_token_ids")), "vllm"),
        (_ints(choice.get("prompt_token_ids")), "sglang"),
        (_ints(meta.get("prompt_token_ids")), "sglang"),
        (_ints(data.get(PROMPT_IDS_KEY)), "llama.cpp"),
    ):
        if ids is not None:
            out.prompt_ids = ids
            out.server = out.server or server
            break
    if out.prompt_ids is None:
        if isinstance(data.get(PROMPT_IDS_ERROR_KEY), str):
            out.prompt_error = data[PROMPT_IDS_ERROR_KEY]
        elif is_llama_cpp(data):
            out.server = out.server or "llama.cpp"
            out.prompt_error = (
                "llama.cpp returns no prompt token ids; with model.return_token_ids: true "
                "mimoagent asks its /tokenize for them"
            )
    return out
