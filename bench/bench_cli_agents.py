"""CLI agents: install time per CLI (cold from the registry, cached, from a payload) and the per-call
overhead of the recording proxy.

    uv run python -m bench.bench_cli_agents                     # every CLI, proxy overhead
    uv run python -m bench.bench_cli_agents --cli claude-code --calls 300

Cold: a fresh cache folder and a fresh npm cache, so every byte comes from the registry (network-bound).
Cached: what every rollout after the first pays (the cache check). Payload: unpacking the archive of
`mimoagent payload build` into a fresh cache (built first when missing; its build time is not counted).
Proxy: N streamed Anthropic Messages calls to the scripted server (in this process), directly and through
the recording proxy writing agent_msgs/; the difference per call is the proxy's cost.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from mimo_core.agents.blackbox import cli_agents, payload, spec_for
from mimo_core.agents.blackbox.install import ensure_installed


@contextmanager
def _cache(path: Path):
    old = os.environ.get("MIMOAGENT_CACHE_DIR")
    os.environ["MIMOAGENT_CACHE_DIR"] = str(path)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MIMOAGENT_CACHE_DIR", None)
        else:
            os.environ["MIMOAGENT_CACHE_DIR"] = old


def install_times(name: str, payload_dir: Path) -> tuple[float, float, float, float]:
    spec = spec_for(name)
    assert spec is not None
    quiet = lambda _text: None  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="mimo-bench-cli-") as tmp:
        with _cache(Path(tmp) / "cold"):
            t0 = time.monotonic()
            folder = ensure_installed(spec, spec.default_version, {}, quiet)
            cold = time.monotonic() - t0
            t0 = time.monotonic()
            ensure_installed(spec, spec.default_version, {}, quiet)
            cached = time.monotonic() - t0
        inodes = {
            (st.st_dev, st.st_ino): st.st_size for st in (p.lstat() for p in folder.rglob("*")) if not p_is_link(st)
        }
        size = sum(inodes.values()) / 1e6  # hard links (claude-code's binary) counted once
        archive = payload_dir / payload.archive_name(spec, spec.default_version)
        if not archive.exists():
            with _cache(Path(tmp) / "cold"):
                payload.build(spec, spec.default_version, {}, payload_dir, quiet)
        with _cache(Path(tmp) / "payload"):
            t0 = time.monotonic()
            payload.unpack(archive, spec, spec.default_version)
            unpacked = time.monotonic() - t0
    return cold, cached, unpacked, size


def p_is_link(st: os.stat_result) -> bool:
    import stat

    return not stat.S_ISREG(st.st_mode)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def proxy_overhead(calls: int) -> tuple[float, float, float, float]:
    """(direct ms/call, proxied ms/call, direct CPU ms/call, proxied CPU ms/call), this process's CPU."""
    import http.client
    import json
    from urllib.parse import urlsplit

    from mimo_core.agents.blackbox.proxy import RecordingProxy
    from mimo_core.records.model_calls import StepWriter
    from testkit.scripted_llm import Reply, ScriptedLLM, turns

    body = {"model": "m", "max_tokens": 100, "stream": True, "messages": [{"role": "user", "content": "x" * 2000}]}
    reply = Reply(content="y" * 400, tool_calls=[("Bash", {"command": "echo hi"})])
    with ScriptedLLM(turns(reply)) as server, tempfile.TemporaryDirectory() as tmp:
        writer = StepWriter(Path(tmp))
        data = json.dumps(body).encode()
        with RecordingProxy(server.url, lambda s, q, r, _t: writer.record(s, q, r)) as proxy:
            results = []
            for base in (server.url, proxy.url()):
                parts = urlsplit(base)
                conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)  # keep-alive

                def post(conn: http.client.HTTPConnection = conn) -> None:
                    conn.request("POST", "/v1/messages", body=data, headers={"Content-Type": "application/json"})
                    conn.getresponse().read()

                for _ in range(20):  # warm-up: connections, imports
                    post()
                t0, c0 = time.monotonic(), _cpu()
                for _ in range(calls):
                    post()
                results.append(((time.monotonic() - t0) / calls * 1e3, (_cpu() - c0) / calls * 1e3))
                conn.close()
    (direct, direct_cpu), (proxied, proxied_cpu) = results
    return direct, proxied, direct_cpu, proxied_cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cli", action="append", choices=sorted(cli_agents()), help="default: every CLI")
    p.add_argument("--calls", type=int, default=200, help="model calls for the proxy overhead")
    p.add_argument("--payloads", default=str(Path(tempfile.gettempdir()) / "mimo-bench-payloads"))
    p.add_argument("--no-install", action="store_true", help="proxy overhead only")
    args = p.parse_args()
    if not args.no_install:
        if shutil.which("npm") is None:
            raise SystemExit("npm is needed for the install figures (--no-install skips them)")
        print(f"{'CLI':<16}{'cold install':>14}{'cached':>10}{'payload':>10}{'size':>10}")
        for name in args.cli or sorted(cli_agents()):
            cold, cached, unpacked, size = install_times(name, Path(args.payloads))
            print(f"{name:<16}{cold:>13.1f}s{cached * 1e3:>8.1f}ms{unpacked:>9.1f}s{size:>8.0f}MB", flush=True)
    direct, proxied, direct_cpu, proxied_cpu = proxy_overhead(args.calls)
    print(f"\nrecording proxy, {args.calls} streamed Messages calls (this process: client + proxy + recorder):")
    print(f"  direct   {direct:6.2f} ms/call wall  {direct_cpu:6.2f} ms/call CPU")
    print(f"  proxied  {proxied:6.2f} ms/call wall  {proxied_cpu:6.2f} ms/call CPU")
    print(f"  overhead {proxied - direct:6.2f} ms/call wall  {proxied_cpu - direct_cpu:6.2f} ms/call CPU")


if __name__ == "__main__":
    main()
