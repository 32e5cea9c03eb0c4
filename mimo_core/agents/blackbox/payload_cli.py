"""`mimoagent payload build`: one offline archive per (CLI, version), runtime included.

    mimoagent payload build --cli claude-code --cli codex -o payloads/
    mimoagent payload build --all --install-env NPM_REGISTRY=http://mirror:4873 -o payloads/

Point a config at one with `agent.payload_path` (or `payload_url`) and the install needs no network.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from mimo_core.agents.blackbox import cli_agents, payload, spec_for
from mimo_core.agents.blackbox.install import resolve_version
from mimo_core.errors import ConfigError


def build_parser(parser_class: type[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = parser_class(
        prog="mimoagent payload build", description="Build offline install archives of CLI agents (agent.payload_path)."
    )
    p.add_argument("--cli", action="append", default=[], choices=sorted(cli_agents()), help="a CLI (repeatable)")
    p.add_argument("--all", action="store_true", help="every CLI agent at its default version")
    p.add_argument("--version", default=None, help="version to pack (one --cli only); default: the adapter's pin")
    p.add_argument(
        "--install-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="mirror settings for the install (NPM_REGISTRY, PIP_INDEX_URL, ...)",
    )
    p.add_argument("-o", "--output", required=True, help="folder for the archives")
    return p


def main(argv: list[str], parser_class: type[argparse.ArgumentParser]) -> int:
    args = build_parser(parser_class).parse_args(argv)
    names = sorted(cli_agents()) if args.all else args.cli
    if not names:
        raise ConfigError("payload build: name at least one --cli, or --all")
    if args.version and len(names) != 1:
        raise ConfigError("payload build: --version needs exactly one --cli")
    install_env = {}
    for item in args.install_env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"payload build: --install-env {item!r} is not KEY=VALUE")
        install_env[key] = value
    for name in names:
        spec = spec_for(name)
        assert spec is not None  # argparse choices
        version = resolve_version(spec, args.version, allow_latest=False)
        start = time.monotonic()
        path = payload.build(
            spec, version, install_env, Path(args.output), log=lambda text: print(text, file=sys.stderr)
        )
        size = path.stat().st_size / 1e6
        print(f"{name} {version}: {path} ({size:.0f} MB, {time.monotonic() - start:.1f}s)")
    return 0
