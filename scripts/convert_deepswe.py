"""Convert a folder of Harbor tasks (DeepSWE or any other, schema 1.3) into a mimoagent JSONL.

    uv run python scripts/convert_deepswe.py --src deep-swe/tasks --out deepswe.jsonl

One row per task folder (a folder holding task.toml). Paths in the rows (the environment/ build
context) are written relative to the output file. A task whose verifier files are missing (tests/test.sh,
or a file its scripts read such as /tests/config.json) is reported on stderr, one line per task, and
marked in its row (`verifier_files_missing`): grading it is a grading_error naming the files. With
`--strict` such tasks are an error instead: nothing is written and the exit code is 1.
The logic lives in mimo_core.datasets.harbor, which the loader also uses to read a Harbor folder
directly (`--dataset deep-swe/tasks`).
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
    parser.add_argument(
        "--strict", action="store_true", help="fail (exit 1, nothing written) when a task's verifier files are missing"
    )
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
    incomplete = [r for r in rows if r.get("verifier_files_missing")]
    for r in incomplete:
        print(
            f"{'error' if args.strict else 'warning'}: task {r['instance_id']}: "
            f"verifier file(s) missing: {', '.join(r['verifier_files_missing'])}"
            + ("" if args.strict else " (row marked: grading it is a grading_error)"),
            file=sys.stderr,
        )
    if incomplete and args.strict:
        print(
            f"error: {len(incomplete)} task(s) have missing verifier files; nothing written (--strict)", file=sys.stderr
        )
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    tmp.replace(out)
    print(
        f"converted {len(rows)} task(s) from {src} to {out}"
        + (f"; {len(incomplete)} marked with missing verifier files" if incomplete else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
