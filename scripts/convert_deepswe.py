"""Convert a folder of Harbor tasks (DeepSWE or any other, schema 1.3) into a mimoagent JSONL.

    uv run python scripts/convert_deepswe.py --src deep-swe/tasks --out deepswe.jsonl

One row per task folder (a folder holding task.toml). Paths in the rows (the environment/ build
context) are written relative to the output file. The logic lives in mimo_core.datasets.harbor, which
the loader also uses to read a Harbor folder directly (`--dataset deep-swe/tasks`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mimo_core.datasets.harbor import convert_dir
from mimo_core.errors import DatasetError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", required=True, help="a Harbor task folder, or a folder of them")
    parser.add_argument("--out", required=True, help="the JSONL file to write")
    args = parser.parse_args(argv)
    src, out = Path(args.src), Path(args.out)
    if not src.is_dir():
        print(f"error: --src {src} is not a folder", file=sys.stderr)
        return 2
    try:
        rows = convert_dir(src, relative_to=out.resolve().parent)
    except DatasetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not rows:
        print(f"error: no Harbor tasks (folders with task.toml) under {src}", file=sys.stderr)
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    tmp.replace(out)
    print(f"converted {len(rows)} task(s) from {src} to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
