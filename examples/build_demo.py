"""Rebuild examples/demo.jsonl: the Harbor tasks in examples/demo/ (through the DeepSWE converter) plus
the non-Harbor rows in examples/rows/<task>/ (row.json + repo/ + gold.patch [+ test.patch] [+ tests/]).

    uv run python examples/build_demo.py            # writes examples/demo.jsonl
    uv run python examples/build_demo.py --check    # exit 1 if demo.jsonl is out of date

Rows embed their starting repository (a reproducible base64 tarball), so the JSONL works wherever it is
copied.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mimo_core.datasets.harbor import convert_dir, files_map, tar_folder

HERE = Path(__file__).resolve().parent


def row_from_folder(folder: Path) -> dict[str, Any]:
    row = json.loads((folder / "row.json").read_text())
    row["repo_archive"] = tar_folder(folder / "repo")
    gold = (folder / "gold.patch").read_text()
    row["gold_patch"] = gold
    if (folder / "test.patch").exists():
        row["test_patch"] = (folder / "test.patch").read_text()
    if (folder / "tests").is_dir():
        row["test_files"] = files_map(folder / "tests")
    return row


def build() -> str:
    rows = convert_dir(HERE / "demo", relative_to=HERE)
    rows += [row_from_folder(d) for d in sorted((HERE / "rows").iterdir()) if (d / "row.json").exists()]
    return "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only check that demo.jsonl is up to date")
    args = parser.parse_args()
    text, out = build(), HERE / "demo.jsonl"
    if args.check:
        if not out.exists() or out.read_text() != text:
            print(f"{out} is out of date: run `uv run python examples/build_demo.py`", file=sys.stderr)
            return 1
        return 0
    out.write_text(text)
    print(f"wrote {text.count(chr(10))} rows to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
