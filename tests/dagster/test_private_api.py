"""Dagster's private API is used in one module only (mimo_assets/dagster_private.py)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("mimo_assets", "resources", "mimo_core")
ALLOWED = REPO / "mimo_assets" / "dagster_private.py"


def _private_uses(path: Path) -> list[str]:
    """`import dagster._x`, `from dagster._x import ...` and "dagster._x" strings (import_module, -m)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("dagster._")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dagster._"):
            found.append(str(node.module))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("dagster._"):
            found.append(node.value)
    return found


def test_no_module_but_dagster_private_uses_dagsters_private_api() -> None:
    offenders = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            uses = _private_uses(path)
            if uses and path != ALLOWED:
                offenders[str(path.relative_to(REPO))] = uses
    assert offenders == {}, f"import these through mimo_assets/dagster_private.py instead: {offenders}"
    assert _private_uses(ALLOWED), "dagster_private.py should hold the private names"


def test_each_private_name_loads_from_the_pinned_dagster() -> None:
    import mimo_assets.dagster_private as private

    for name in private.__all__:
        assert getattr(private, name) is not None, name
