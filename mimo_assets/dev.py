"""`mimoagent-dagster [--postgres URL] dev|webserver|daemon|ingest ...`: Dagster on the instance CLI runs
record into.

Before it starts Dagster (not for `--help`) it records the CLI runs that finished since Dagster last ran
(cli_recording/ingest.py): without a daemon, a CLI run shows on the webserver's next start. `ingest`
does only that, and exits.

Dagster is started as `<this python> -m dagster ...`, never looked up on PATH, so the command works
when called by absolute path from a venv that is not activated.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from mimo_assets.dagster_private import DAEMON_MODULE
from mimo_assets.instance.home import POSTGRES_URL_ENV, dagster_home, get_instance, schema_ready

WORKSPACE = Path(__file__).resolve().parent.parent / "workspace.yaml"
MODULES = {"webserver": "dagster_webserver", "daemon": DAEMON_MODULE}


def command(args: list[str]) -> list[str]:
    """The argv to exec: `python -m dagster_webserver ...`, `python -m dagster dev ...`, etc."""
    tool, rest = (args[0], args[1:]) if args else ("dev", [])
    if tool in MODULES:
        module = MODULES[tool]
        rest = ["run", *rest] if tool == "daemon" else rest
    else:
        module, rest = "dagster", [tool, *rest]
    if tool in ("dev", "webserver", "daemon") and "-w" not in rest and "--workspace" not in rest:
        rest = [*rest, "-w", str(WORKSPACE)]
    return [sys.executable, "-m", module, *rest]


def _prepare_schema(rest: list[str]) -> None:
    """A new home's tables, created under the home's lock before Dagster opens it: the webserver, the
    daemon and a CLI run's recorder starting at the same moment would otherwise race to create them
    ("table already exists"). Once per home; not for `--help`."""
    tool = rest[0] if rest else "dev"
    if tool not in (*SERVES, "ingest") or "--help" in rest or schema_ready():
        return
    try:
        get_instance().dispose()
    except Exception as e:  # Dagster says what is wrong with the storage, in its own words, next
        print(
            f"mimoagent-dagster: could not prepare the instance ({type(e).__name__}); starting Dagster anyway",
            file=sys.stderr,
        )


SERVES = ("dev", "webserver", "daemon")


def _ingest(rest: list[str]) -> None:
    """Record the finished CLI runs of this home, in this process; never stops Dagster from starting."""
    tool = rest[0] if rest else "dev"
    if tool not in (*SERVES, "ingest") or "--help" in rest:
        return
    from mimo_assets.cli_recording import registry

    if not registry.ready(dagster_home()):  # the common case: no import of Dagster, no instance
        return
    try:
        from mimo_assets.cli_recording.ingest import ingest_pending

        ingest_pending()
    except Exception as e:  # the entries stay: the daemon's sensor or the next start records them
        print(
            f"mimoagent-dagster: could not record finished CLI runs ({type(e).__name__}: {e}); starting Dagster anyway",
            file=sys.stderr,
        )


def main(argv: list[str] | None = None) -> None:
    # Only our own leading flag is parsed here: everything else (including --help) is Dagster's.
    parser = argparse.ArgumentParser(prog="mimoagent-dagster", add_help=False)
    parser.add_argument("--postgres", metavar="URL")
    args = list(sys.argv[1:] if argv is None else argv)
    cut = next(
        (i for i, a in enumerate(args) if not a.startswith("--postgres") and (i == 0 or args[i - 1] != "--postgres")),
        len(args),
    )
    opts = parser.parse_args(args[:cut])
    rest = args[cut:]
    if opts.postgres:
        os.environ[POSTGRES_URL_ENV] = opts.postgres  # store runs and events in PostgreSQL
    try:
        os.environ["DAGSTER_HOME"] = str(dagster_home())
    except ValueError as e:
        print(f"mimoagent-dagster: {e}", file=sys.stderr)
        sys.exit(2)
    _prepare_schema(rest)
    _ingest(rest)
    if rest[:1] == ["ingest"]:
        return
    argv_out = command(rest)
    print(f"DAGSTER_HOME={os.environ['DAGSTER_HOME']}", file=sys.stderr)
    os.execv(argv_out[0], argv_out)
