"""argparse types shared by the `mimoagent` subcommands; light, so building a parser imports nothing big."""

from __future__ import annotations

import argparse


def statuses_arg(text: str) -> list[str]:
    """argparse type of a comma-separated list of exit statuses (--rerun-status, export --status)."""
    from mimo_core.status import parse_statuses

    try:
        return [s.value for s in parse_statuses(text)]
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
