"""`mimoagent view OUTPUT_DIR ...`: the viewer's routes on starlette, served by uvicorn on 127.0.0.1 (a
free port unless `--port`). GET only; nothing under the output folders is ever written."""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path

from starlette.applications import Starlette
from starlette.routing import Route

from mimo_core.viewer.folders import OutputFolder, open_folders
from mimo_core.viewer.pages import Pages
from mimo_core.viewer.urls import run_path


def build_app(folders: list[OutputFolder]) -> Starlette:
    pages = Pages(folders)
    return Starlette(
        routes=[
            Route("/", pages.home),
            Route("/runs/{slug}/", pages.run),
            Route("/runs/{slug}/r/{rollout:path}", pages.rollout),
            Route("/runs/{slug}/files/{rel:path}", pages.file),
            Route("/runs/{slug}/step", pages.step),
            Route("/instance", pages.instance),
        ]
    )


def build_parser(parser_class: type[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = parser_class(
        prog="mimoagent view",
        description="Browse the rollouts of one or more output folders in a local web page (read-only).",
    )
    p.add_argument("output_dirs", nargs="+", metavar="OUTPUT_DIR", help="a run's output folder (holds results.jsonl)")
    p.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    return p


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        from mimo_core.viewer.folders import ViewerInputError

        raise ViewerInputError(f"--host {host} --port {port}: cannot listen there: {e.strerror or e}") from None
    sock.listen(2048)  # listening before the URL is printed: a request sent at once waits, not refused
    return sock


def main(argv: list[str], parser_class: type[argparse.ArgumentParser]) -> int:
    import uvicorn

    args = build_parser(parser_class).parse_args(argv)
    folders = open_folders([Path(d) for d in args.output_dirs])
    for f in folders:
        if f.torn_note():
            print(f"mimoagent view: warning: {f.torn_note()}", file=sys.stderr)
    sock = _bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    start = run_path(folders[0].slug) if len(folders) == 1 else "/"
    n = sum(len(f.records()) for f in folders)
    print(
        f"mimoagent view: {n} rollouts in {len(folders)} output folder(s) at http://{shown}:{port}{start} "
        "(Ctrl-C stops)",
        flush=True,
    )
    server = uvicorn.Server(uvicorn.Config(build_app(folders), log_level="warning", access_log=False))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    return 0
