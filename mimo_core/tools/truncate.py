"""Head + tail truncation for observations: the start shows what ran, the end shows how it finished."""

from __future__ import annotations


def truncate_middle(text: str, max_chars: int) -> str:
    """Keep the first and last parts of `text` within about `max_chars`, stating how much was elided."""
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    head = max_chars // 2
    tail = max_chars - head
    elided = len(text) - head - tail
    return f"{text[:head]}\n[... {elided} characters elided ...]\n{text[len(text) - tail :]}"
