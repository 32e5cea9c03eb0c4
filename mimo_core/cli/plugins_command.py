"""`mimoagent plugins`: every plug-in this install can use, by kind, and where each comes from.

mimoagent plugins                 # built in, or the distribution whose entry point adds it
mimoagent plugins --check         # also import each: what cannot load, and how to install what it needs
mimoagent plugins --kind agents
"""

from __future__ import annotations

import argparse

from mimo_core import plugins

EXIT_CANNOT_LOAD = 1  # --check: some plug-in does not import


def build_parser(parser_class: type[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = parser_class(
        prog="mimoagent plugins",
        description="List the plug-ins a config can name, by kind (backends, agents, dataset types, model "
        "protocols, tools, observers): each one's name, where it comes from (built in, or the installed "
        "distribution whose entry point adds it) and its module:attr.",
    )
    p.add_argument("--kind", action="append", choices=list(plugins.KINDS), help="only this kind (repeatable)")
    p.add_argument(
        "--check",
        action="store_true",
        help=f"import each plug-in and say which cannot load (exit {EXIT_CANNOT_LOAD} if one cannot)",
    )
    return p


def main(argv: list[str], parser_class: type[argparse.ArgumentParser]) -> int:
    args = build_parser(parser_class).parse_args(argv)
    failed = 0
    for i, kind in enumerate(args.kind or plugins.KINDS):
        spec = plugins.KINDS[kind]
        rows = plugins.installed(kind)
        aliases = plugins.ALIASES.get(kind, {})
        print(("\n" if i else "") + f"{kind} ({spec.label}; entry points: {spec.group})")
        if not rows:
            print("  (none installed)")
        width = max([len(r.name) for r in rows] + [len(a) for a in aliases] + [4])
        source_width = max([len(r.source) for r in rows] + [8])
        for row in rows:
            line = f"  {row.name:<{width}}  {row.source:<{source_width}}  {row.target}{_note(row, rows)}"
            if args.check:
                problem = _load_problem(row)
                failed += problem is not None
                line += f"  [{'ok' if problem is None else 'cannot load: ' + problem}]"
            print(line)
        for alias, name in aliases.items():
            print(f"  {alias:<{width}}  alias of {name}")
    return EXIT_CANNOT_LOAD if failed else 0


def _note(row: plugins.Plugin, rows: list[plugins.Plugin]) -> str:
    """What a lookup of this name does not reach: an entry point under a built-in's name, or a name several
    distributions provide (a lookup of it is an error naming them)."""
    if row.source == plugins.BUILT_IN:
        return ""
    if row.name in plugins.BUILT_INS[row.kind]:
        return "  (unused: the built-in of this name wins)"
    if sum(r.name == row.name for r in rows) > 1:
        return "  (conflict: several distributions provide this name)"
    return ""


def _load_problem(row: plugins.Plugin) -> str | None:
    try:
        plugins.load(row)
    except Exception as e:  # any import failure of a plug-in is reported, not raised
        return f"{type(e).__name__}: {e}"
    return None
