"""Which paths of a task's repository are its test infrastructure: what an agent's change must not reach
the verifier through.

A test run imports more than the code under test: every `conftest.py` on the way, the runner's
configuration (`addopts` can load a plugin or deselect the failing test), modules that shadow the runner
or the standard library, import hooks (`.pth`, `sitecustomize`, an egg-info's `pytest11` entry point),
and git's `.gitattributes`. Each is classified here by its path alone; the tamper check (`tamper.py`)
compares them with the task's base commit. A path the reference solution touches is the task's own
change and is never protected (`exempt`).
"""

from __future__ import annotations

import configparser
import fnmatch
import json
import sys
import tomllib
from pathlib import PurePosixPath

# Folders whose files are tests (or their data): any path with one of these as a component.
TEST_DIRS = frozenset({"test", "tests", "__tests__", "testdata"})
# File names that are tests wherever they are.
TEST_FILES = (
    "test_*.py",
    "*_test.py",
    "tests.py",
    "*_test.go",
    "*_spec.rb",
    "*Test.java",
    "*Tests.java",
    "*.test.js",
    "*.test.jsx",
    "*.test.ts",
    "*.test.tsx",
    "*.test.mjs",
    "*.test.cjs",
    "*.spec.js",
    "*.spec.jsx",
    "*.spec.ts",
    "*.spec.tsx",
    "*.spec.mjs",
    "*.spec.cjs",
)
# Whole files that configure a test runner or the code's transformation on its way to the runner.
RUNNER_FILES = (
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    ".mocharc.*",
    "jest.config.*",
    "vitest.config.*",
    "vitest.workspace.*",
    "babel.config.*",
    ".babelrc",
    ".babelrc.*",
    "karma.conf.*",
    ".rspec",
    "phpunit.xml",
    "phpunit.xml.dist",
    ".gitattributes",
)
# Files with a runner's sections among other things: only those sections are compared.
SECTIONED_FILES = frozenset({"tox.ini", "setup.cfg", "pyproject.toml", "package.json"})
# Code that runs at interpreter start or plugin discovery.
IMPORT_HOOKS = ("*.pth", "sitecustomize.py", "usercustomize.py")
# Modules a test run imports by name: a new top-level module of one of these names next to the tests or at
# the repository's root is imported instead of the real one.
RUNNER_MODULES = frozenset(
    {
        "pytest",
        "_pytest",
        "py",
        "pluggy",
        "iniconfig",
        "nose",
        "nose2",
        "coverage",
        "hypothesis",
        "xdist",
        "pytest_timeout",
        "pytest_cov",
    }
)
SHADOW_NAMES = frozenset(sys.stdlib_module_names) | RUNNER_MODULES

# Caches a run writes itself: never the agent's test infrastructure (`__pycache__` is emptied before grading).
CACHE_DIRS = frozenset(
    {
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".hypothesis",
        ".tox",
        ".nox",
        "node_modules",
        ".git",
    }
)

_INI_SECTIONS = {"tox.ini": ("pytest", "tox", "testenv"), "setup.cfg": ("tool:pytest", "pytest")}
_PACKAGE_KEYS = ("jest", "mocha", "ava", "vitest", "nyc")
_PACKAGE_SCRIPTS = ("test", "pretest", "posttest")


def _match(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def category(path: str) -> str | None:
    """What a repository path is to the test run: `conftest`, `import_hook`, `runner_config`,
    `runner_sections` (a file whose runner sections count), `test_file`, or None (the code under test)."""
    p = PurePosixPath(path)
    name, parts = p.name, p.parts
    if any(part in CACHE_DIRS for part in parts[:-1]):
        return None
    if name == "conftest.py":
        return "conftest"
    if _match(name, IMPORT_HOOKS) or (
        name == "entry_points.txt" and len(parts) > 1 and parts[-2].endswith((".egg-info", ".dist-info"))
    ):
        return "import_hook"
    if _match(name, RUNNER_FILES) or (len(parts) > 1 and parts[-2] == ".cargo" and name in ("config", "config.toml")):
        return "runner_config"
    if name in SECTIONED_FILES:
        return "runner_sections"
    if _match(name, TEST_FILES) or any(part in TEST_DIRS for part in parts[:-1]):
        return "test_file"
    return None


def shadow_name(path: str) -> str | None:
    """The module name a path would be imported as if its folder is on sys.path (`x.py`, `x/`), when
    that name is the runner's or the standard library's; else None."""
    name = PurePosixPath(path).name
    stem = name[:-3] if name.endswith(".py") else name
    return stem if stem in SHADOW_NAMES and "." not in stem else None


def _ini_sections(text: str, prefixes: tuple[str, ...]) -> dict[str, dict[str, str]]:
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    parser.read_string(text)
    return {
        s: dict(parser.items(s)) for s in parser.sections() if any(s == p or s.startswith(p + ":") for p in prefixes)
    }


def _toml_sections(text: str) -> object:
    tool = tomllib.loads(text).get("tool") or {}
    if not isinstance(tool, dict):
        return tool
    return {k: v for k, v in tool.items() if k.startswith("pytest")}


def _package_sections(text: str) -> object:
    data = json.loads(text)
    if not isinstance(data, dict):
        return data
    scripts = data.get("scripts")
    if not isinstance(scripts, dict):
        scripts = {}
    return ({k: data.get(k) for k in _PACKAGE_KEYS}, {k: scripts.get(k) for k in _PACKAGE_SCRIPTS})


def runner_sections(path: str, data: bytes | None) -> object:
    """The parts of a sectioned file a test runner reads (None for a missing file). Raises ValueError
    for a file that does not parse: then it counts as changed."""
    if data is None:
        return None
    text = data.decode("utf-8", errors="strict")
    name = PurePosixPath(path).name
    try:
        if name == "pyproject.toml":
            return _toml_sections(text)
        if name == "package.json":
            return _package_sections(text)
        return _ini_sections(text, _INI_SECTIONS[name])
    except (tomllib.TOMLDecodeError, configparser.Error, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(str(e)) from None


def sections_changed(path: str, old: bytes | None, new: bytes | None) -> bool:
    """Whether the runner's sections of a sectioned file differ between the base and the agent's version."""
    try:
        before = runner_sections(path, old)
    except ValueError:
        return True  # the base itself does not parse: any change may matter
    try:
        return runner_sections(path, new) != before
    except ValueError:
        return True
