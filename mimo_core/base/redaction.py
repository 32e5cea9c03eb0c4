"""Secrets never reach a file or a log: every writer passes its text through `redact`.

A key can reach text in many shapes: echoed whole by a provider's 401 body, cut short ("sk-abc12..."),
inside a Basic-auth header (base64 of `user:key`), URL-encoded, or in a URL's userinfo. So each secret
is registered once (when a config is loaded and when a model client is built) and `redact` replaces, in
any text: the key itself and any run of its first 8+ characters; the base64 and URL-safe base64 of any
text that contains the key (the three alignments of its bytes, so `user:key` is covered whatever the
user); and its URL-encoding. Writers call it on the encoded text they are about to write (results.jsonl,
traj.json, reward_extra_info.json, instance.log, agent_msgs, the Dagster event log), so no code path has
to remember to scrub.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Iterable, Mapping
from urllib.parse import quote, urlsplit, urlunsplit

REDACTED = "***"
MIN_SECRET = 6  # shorter values ("k", "none") would scrub ordinary words
PREFIX_RUN = 8  # a cut-short echo of at least this many leading characters is still the key
_SECRET_NAME = re.compile(r"(api[_-]?key|(^|[_-])token$|secret|password|passwd|authorization|credential)", re.I)

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None


def _prefix_run(secret: str) -> str:
    """A regex matching the secret's first PREFIX_RUN characters followed by as much of the rest as is there."""
    head, rest = secret[:PREFIX_RUN], secret[PREFIX_RUN:]
    tail = ""
    for ch in reversed(rest):
        tail = f"(?:{re.escape(ch)}{tail})?"
    return re.escape(head) + tail


def _base64_cores(secret: bytes) -> set[str]:
    """The base64 characters that depend on the secret's bytes only, for each of the three byte
    alignments it can have inside a longer text: one of them appears in the base64 of any such text."""
    cores = set()
    n = len(secret)
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + secret).decode()
        start, end = -(-8 * shift // 6), (8 * (shift + n)) // 6
        core = encoded[start:end]
        if len(core) >= PREFIX_RUN:
            cores.add(core)
            cores.add(core.replace("+", "-").replace("/", "_"))
    return cores


def variants(secret: str) -> list[str]:
    """Regex alternatives for one secret, longest first."""
    out = {re.escape(v) for v in _base64_cores(secret.encode())}
    quoted = quote(secret, safe="")
    if quoted != secret:
        out.add(re.escape(quoted))
    out.add(_prefix_run(secret) if len(secret) > PREFIX_RUN else re.escape(secret))
    return sorted(out, key=len, reverse=True)


def register(values: Iterable[str | None]) -> None:
    """Remember secrets to redact from now on (process-wide; values too short to be keys are ignored)."""
    global _pattern
    new = {v.strip() for v in values if isinstance(v, str) and len(v.strip()) >= MIN_SECRET}
    new.discard(REDACTED)
    with _lock:
        if new <= _secrets:
            return
        _secrets.update(new)
        alternatives = sorted({a for s in _secrets for a in variants(s)}, key=len, reverse=True)
        _pattern = re.compile("|".join(alternatives))


_seen_environ: set[tuple[str, str]] = set()


def register_environment(environ: Mapping[str, str]) -> None:
    """Every value of a secret-looking variable (OPENAI_API_KEY, *_TOKEN, ...): a CLI agent or the SDK
    may read them without passing through a config. Cheap when nothing changed since the last call."""
    found = {(k, v) for k, v in environ.items() if is_secret_name(k)}
    if found <= _seen_environ:
        return
    _seen_environ.update(found)
    register(v for _, v in found)


def is_secret_name(name: str) -> bool:
    """A key or variable name whose value is a credential (`max_tokens` is not: "token" only as a whole part)."""
    return bool(_SECRET_NAME.search(str(name)))


def redact(text: str) -> str:
    """`text` with every registered secret, in every encoding above, replaced by `***`."""
    pattern = _pattern
    if pattern is None or not text:
        return text
    return pattern.sub(REDACTED, text)


def redact_bytes(data: bytes) -> bytes:
    """`redact` on a file's bytes when they are UTF-8 text (binary files are left as they are)."""
    if _pattern is None:
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    red = redact(text)
    return data if red == text else red.encode("utf-8")


def redact_data(data: object) -> object:
    """`redact` applied to every string of a JSON-like value."""
    if _pattern is None:
        return data
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, dict):
        return {k: redact_data(v) for k, v in data.items()}
    if isinstance(data, list):
        return [redact_data(v) for v in data]
    return data


def strip_userinfo(url: str) -> str:
    """`scheme://user:key@host/path` → `scheme://***@host/path` (the userinfo is a credential)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.scheme or "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, f"{REDACTED}@{host}", parts.path, parts.query, parts.fragment))


def userinfo_secret(url: str) -> str | None:
    """The password of a URL's userinfo (or a lone token in the user part), to register before the URL
    is stripped."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if "@" not in parts.netloc:
        return None
    return parts.password or parts.username or None


def secrets_in(data: object, secret_key: bool = False) -> list[str]:
    """The credentials in a parsed config: values of secret-looking keys, and URLs' userinfo."""
    found: list[str] = []
    if isinstance(data, dict):
        for k, v in data.items():
            found += secrets_in(v, is_secret_name(str(k)))
    elif isinstance(data, list):
        for v in data:
            found += secrets_in(v, secret_key)
    elif isinstance(data, str):
        if secret_key:
            found.append(data.removeprefix("Bearer ").strip())
        elif "@" in data and "://" in data:
            found += [v for v in (userinfo_secret(data),) if v]
    return found
