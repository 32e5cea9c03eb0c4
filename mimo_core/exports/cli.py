"""`mimoagent export OUTPUT_DIR --format sft|rl|atif [-o DEST] [filters]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mimo_core.cli.arg_types import statuses_arg
from mimo_core.exports.source import ExportFilter
from mimo_core.exports.write import FORMATS, run_export

SHOW_SKIPPED = 10  # rollouts left out named on stderr; all of them are in the report


def build_parser(parser_class: type[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = parser_class(
        prog="mimoagent export",
        description="Training exports of an output folder's finished rollouts (docs/exports.md).",
    )
    p.add_argument(
        "output_dirs", nargs="+", type=Path, metavar="OUTPUT_DIR", help="a run's -o folder (several: one export)"
    )
    p.add_argument(
        "--format",
        required=True,
        choices=FORMATS,
        help="sft: a row per rollout (OpenAI chat messages + tools); rl: a row per model call with "
        "token ids, logprobs and loss mask; atif: a Harbor ATIF file per rollout",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        metavar="DEST",
        help="folder to write into (default OUTPUT_DIR/exports)",
    )
    p.add_argument("--status", type=statuses_arg, default=[], metavar="STATUS,...", help="keep these exit statuses")
    p.add_argument("--min-reward", type=float, default=None, help="keep rewards >= this (drops ungraded rollouts)")
    p.add_argument("--max-reward", type=float, default=None, help="keep rewards <= this (drops ungraded rollouts)")
    p.add_argument("--config", action="append", default=[], metavar="NAME", help="keep this config (repeatable)")
    p.add_argument(
        "--include-errors",
        action="store_true",
        help="sft: also export rollouts that ended in an error (left out by default, named in the report)",
    )
    return p


def main(argv: list[str], parser_class: type[argparse.ArgumentParser]) -> int:
    """Bad input (not an output folder, nothing in it, an unknown format) and an export with no row raise
    ConfigError or exit 2 through `parser_class.error`: the caller turns both into one line and exit 2."""
    args = build_parser(parser_class).parse_args(argv)
    flt = ExportFilter(
        statuses=args.status,
        min_reward=args.min_reward,
        max_reward=args.max_reward,
        configs=args.config,
        include_errors=args.include_errors,
    )
    dest = args.output or args.output_dirs[0] / "exports"
    report = run_export(args.format, args.output_dirs, dest, flt)
    print(report.summary())
    for s in report.skipped[:SHOW_SKIPPED]:
        print(f"mimoagent export: left out {s.rollout}: {s.reason}", file=sys.stderr)
    if len(report.skipped) > SHOW_SKIPPED:
        more = len(report.skipped) - SHOW_SKIPPED
        print(f"mimoagent export: ... and {more} more, see {dest / (args.format + '_report.json')}", file=sys.stderr)
    return 0
