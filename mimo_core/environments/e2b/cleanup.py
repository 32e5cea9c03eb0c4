"""Kill leftover mimoagent sandboxes of an E2B (or CubeSandbox) account: all, one run's, or only those of
dead runners of this host, found by their metadata (`mimoagent.run_id`, `.host`, `.pid`)."""

from __future__ import annotations

import contextlib
import socket

from mimo_core.environments.base import LABEL_RUN_ID
from mimo_core.environments.e2b.options import API_KEY_VAR, E2BOptions, check_credentials
from mimo_core.environments.owners import LABEL_HOST, LABEL_PID, is_stale
from mimo_core.errors import ConfigError, SandboxError


def cleanup(
    run_id: str | None = None,
    stale_only: bool = False,
    options: E2BOptions | None = None,
    live: list[str] | None = None,
    backend: str = "e2b",
) -> int:
    """Kill the account's mimoagent sandboxes; how many. With `stale_only`, only this host's whose runner
    is gone; each one left alone is described in `live`."""
    from e2b import Sandbox, SandboxQuery

    options = options or E2BOptions()
    params: dict = {"api_key": check_credentials(backend, options), "request_timeout": options.request_timeout}
    for key in ("api_url", "domain"):
        if getattr(options, key):
            params[key] = getattr(options, key)
    wanted = {"mimoagent.sandbox": "e2b"}
    if run_id:
        wanted[LABEL_RUN_ID] = run_id
    if stale_only:
        wanted[LABEL_HOST] = socket.gethostname()
    try:
        pages = Sandbox.list(query=SandboxQuery(metadata=wanted), **params)
        found = []
        while pages.has_next:
            found.extend(pages.next_items())
    except Exception as e:
        from e2b import AuthenticationException

        line = (str(e).splitlines() or [""])[0][:200]
        if isinstance(e, AuthenticationException):  # every rollout would fail the same way: say it once, now
            raise ConfigError(
                f"environment_class {backend}: the API refused the key in {API_KEY_VAR}: {line}"
            ) from None
        raise SandboxError(f"{backend}: cannot list sandboxes: {line}") from None
    removed = 0
    for info in found:
        meta = dict(info.metadata or {})
        if stale_only and not is_stale(meta):
            if live is not None:
                live.append(
                    f"{backend} sandbox {info.sandbox_id} (run {meta.get(LABEL_RUN_ID, '?')}, "
                    f"pid {meta.get(LABEL_PID, '?')} on {meta.get(LABEL_HOST, '?')})"
                )
            continue
        with contextlib.suppress(Exception):
            if Sandbox.kill(info.sandbox_id, **params):
                removed += 1
    return removed
