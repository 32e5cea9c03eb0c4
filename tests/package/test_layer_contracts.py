"""The layers (AGENTS.md: the packages): `mimo_core` is the library under the Dagster code location, so it
imports neither `mimo_assets`, `resources` nor Dagster (`dagster` and its `dagster_*` packages), directly or
through another module. Every import counts, as in test_import_cycles.py: those inside functions and under
`if TYPE_CHECKING:` too. Packages count as a whole (grimp's `as_packages`): an import of any module under
a forbidden package, from any module under `mimo_core`."""

from __future__ import annotations

import functools
import itertools

import grimp
import pytest

# The graph holds every first-party package, so a way round through one of them (testkit included) is seen.
FIRST_PARTY = ("mimo_core", "mimo_assets", "resources", "testkit")
LOWER, FORBIDDEN = "mimo_core", ("mimo_assets", "resources", "dagster")


def _graph(*packages: str) -> grimp.ImportGraph:
    return grimp.build_graph(
        *packages, include_external_packages=True, exclude_type_checking_imports=False, cache_dir=None
    )


@functools.cache
def _product_graph() -> grimp.ImportGraph:
    return _graph(*FIRST_PARTY)


def _targets(graph: grimp.ImportGraph, name: str) -> list[str]:
    """`name`, and for an outside package its siblings by name (dagster: dagster_k8s, dagster_shared...),
    as far as anything in the graph imports them."""
    tops = {m for m in graph.modules if "." not in m}
    return sorted(t for t in tops if t == name or (name not in FIRST_PARTY and t.startswith(f"{name}_")))


def _describe(graph: grimp.ImportGraph, chain: tuple[str, ...]) -> str:
    """`a -> b -> c`, then each import's line."""
    lines = [" -> ".join(chain)]
    for importer, imported in itertools.pairwise(chain):
        details = graph.get_import_details(importer=importer, imported=imported)
        where = f"line {details[0]['line_number']}: {details[0]['line_contents']}" if details else "(no line)"
        lines.append(f"    {importer} imports {imported}, {where}")
    return "\n".join(lines)


def forbidden_imports(graph: grimp.ImportGraph, importer: str, forbidden: str) -> list[str]:
    """Each shortest chain from a module of `importer` to a module of `forbidden`, described."""
    found = []
    for target in _targets(graph, forbidden):
        chains = graph.find_shortest_chains(importer=importer, imported=target, as_packages=True)
        found += [_describe(graph, chain) for chain in sorted(chains)]
    return found


@pytest.mark.parametrize("forbidden", FORBIDDEN)
def test_mimo_core_does_not_import(forbidden: str) -> None:
    found = forbidden_imports(_product_graph(), LOWER, forbidden)
    assert not found, f"{LOWER} must not import {forbidden} (AGENTS.md: the packages):\n" + "\n".join(found)


def test_the_contract_sees_the_imports_the_upper_layers_make() -> None:
    """The check can fail: on the real graph it finds what mimo_assets and resources do import."""
    graph = _product_graph()
    assert _targets(graph, "dagster")[0] == "dagster"
    to_dagster = forbidden_imports(graph, "resources", "dagster")
    assert to_dagster and all(c.split("\n")[0].endswith(" -> dagster") for c in to_dagster)
    assert "from dagster import" in to_dagster[0]
    assert forbidden_imports(graph, "mimo_assets", "resources")
    assert forbidden_imports(graph, "mimo_assets", "mimo_core")


def test_the_contract_sees_indirect_function_level_and_type_checking_imports(tmp_path, monkeypatch) -> None:
    """A chain through a function-level import and a TYPE_CHECKING one, into a subpackage of the forbidden
    package and on to Dagster, is reported link by link."""
    for folder in ("lower", "upper", "upper/sub"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "lower" / "a.py").write_text("def f():\n    from lower import b\n    return b\n")
    (tmp_path / "lower" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from upper.sub import c\n"
    )
    (tmp_path / "upper" / "sub" / "c.py").write_text("import dagster\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = _graph("lower", "upper")
    assert forbidden_imports(graph, "lower", "upper") == [
        "lower.b -> upper.sub.c\n    lower.b imports upper.sub.c, line 3: from upper.sub import c"
    ]
    assert forbidden_imports(graph, "lower", "dagster") == [
        "lower.b -> upper.sub.c -> dagster\n"
        "    lower.b imports upper.sub.c, line 3: from upper.sub import c\n"
        "    upper.sub.c imports dagster, line 1: import dagster"
    ]
    assert graph.find_shortest_chain(importer="lower.a", imported="upper.sub.c") == (
        "lower.a",
        "lower.b",
        "upper.sub.c",
    )


# The layers inside mimo_core (AGENTS.md: the layers of mimo_core), by their first name under it.
DOORS = frozenset({"cli", "viewer", "exports", "api"})  # the command line, the viewer, the exports, the library
FOUNDATIONS = frozenset({"base", "errors", "status"})  # what base/ may import


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_violations(graph: grimp.ImportGraph, package: str = "mimo_core") -> list[str]:
    """Each direct import that goes up a layer: a part or `run/` importing a door, anything below `run/`
    importing it, `base/` importing anything but foundations. The package's own `__init__` (the lazy
    public API) is the one module allowed to name every layer."""
    found = []
    for importer in sorted(m for m in graph.modules if m.startswith(f"{package}.")):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            low, high = _layer(importer), _layer(imported)
            if not imported.startswith(f"{package}.") or low == high or not high:
                continue
            up = (
                (high in DOORS and low not in DOORS)
                or (high == "run" and low not in DOORS)
                or (low == "base" and high not in FOUNDATIONS)
            )
            if up:
                found.append(_describe(graph, (importer, imported)))
    return found


def test_mimo_core_layers_import_only_downwards() -> None:
    found = layer_violations(_graph("mimo_core"))
    assert not found, "an import up a layer (AGENTS.md: the layers of mimo_core):\n" + "\n".join(found)


def test_the_layer_check_sees_an_import_up_a_layer(tmp_path, monkeypatch) -> None:
    root = tmp_path / "fakecore"  # laid out like mimo_core, under a name of its own
    for pkg in ("", "base", "run", "cli"):
        (root / pkg).mkdir(exist_ok=True)
        (root / pkg / "__init__.py").write_text("")
    (root / "cli" / "main.py").write_text("X = 1\n")
    (root / "run" / "plan.py").write_text("def f():\n    from fakecore.cli.main import X\n    return X\n")
    (root / "base" / "files.py").write_text("import fakecore.run.plan\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = layer_violations(_graph("fakecore"), "fakecore")
    assert [f.splitlines()[0] for f in found] == [
        "fakecore.base.files -> fakecore.run.plan",
        "fakecore.run.plan -> fakecore.cli.main",
    ], found
