"""No import circle in the product packages: every import counts, including those inside functions and
under `if TYPE_CHECKING:` (a lazy import may save start-up time, but it must not hide a circle)."""

from __future__ import annotations

import grimp
import pytest


def _cycles(package: str) -> list[list[str]]:
    """One circle per import that closes one: the import, then the shortest way back to its importer."""
    graph = grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)
    found: list[list[str]] = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                found.append([importer, *back])
    return found


@pytest.mark.parametrize("package", ["mimo_core", "mimo_assets", "resources", "testkit"])
def test_package_has_no_import_cycle(package: str) -> None:
    cycles = _cycles(package)
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_cycle_finder_sees_function_level_and_type_checking_imports(tmp_path, monkeypatch) -> None:
    """The check above can fail: a circle made only of a function-level import and a TYPE_CHECKING one."""
    pkg = tmp_path / "circle_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from circle_pkg import b\n    return b\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from circle_pkg import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cycles("circle_pkg") == [
        ["circle_pkg.a", "circle_pkg.b", "circle_pkg.a"],
        ["circle_pkg.b", "circle_pkg.a", "circle_pkg.b"],
    ]
