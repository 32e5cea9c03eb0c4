"""mimo_core's public names: few, each the object its module defines, and loaded only on first use, so
`import mimo_core` (which every `mimoagent` start does) stays cheap."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import mimo_core
from mimo_core.errors import ConfigError, DatasetError

INIT = Path(mimo_core.__file__)


def test_importing_the_package_loads_nothing_but_its_version() -> None:
    code = (
        "import sys, mimo_core; print(sorted(m for m in sys.modules if m.startswith('mimo_core'))); "
        "print('pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["['mimo_core', 'mimo_core.version']", "False"]


def test_every_public_name_is_its_modules_own_object() -> None:
    exports = mimo_core._EXPORTS
    assert set(mimo_core.__all__) == {"__version__", *exports} and len(exports) <= 20
    for name, module in exports.items():
        value = getattr(mimo_core, name)
        assert value is getattr(sys.modules[module], mimo_core._ALIASES.get(name, name)), name
    assert set(mimo_core.__all__) <= set(dir(mimo_core))
    assert mimo_core.load_config.__name__ == "load_config"  # the checked one, as the CLI loads
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = mimo_core.nope


def test_the_type_checking_imports_name_the_same_objects() -> None:
    """Editors and type checkers read the `if TYPE_CHECKING:` block; it must say what `__getattr__` gives."""
    block = next(n for n in ast.parse(INIT.read_text()).body if isinstance(n, ast.If))
    seen = {
        (alias.asname or alias.name): (node.module, alias.name)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert seen == {name: (module, mimo_core._ALIASES.get(name, name)) for name, module in mimo_core._EXPORTS.items()}


def test_make_config_checks_like_a_file_and_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"<config bad>: agent\.stepp_limit: unknown key"):
        mimo_core.make_config({"agent": {"stepp_limit": 3}}, name="bad")
    with pytest.raises(ConfigError, match=r"<config bad>.*agent\.tools.*nosuchtool"):
        mimo_core.make_config({"agent": {"tools": [{"tool": "nosuchtool"}]}}, name="bad")
    good = mimo_core.make_config({"model": {"model_name": "${MIMO_NOT_SET:-m1}"}}, name="ok")
    assert (good.name, good.config.model.model_name) == ("ok", "m1")


def test_make_task_validates_the_row_into_its_dataset_type(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="field problem_statement"):
        mimo_core.make_task({"instance_id": "x"})
    (tmp_path / "repo").mkdir()
    task = mimo_core.make_task(
        {"instance_id": "x", "problem_statement": "p", "repo_dir": "repo", "FAIL_TO_PASS": ["t"]},
        source=tmp_path / "tasks.jsonl",
    )
    assert task.dataset_type == "opensource-code" and task.resolve("repo") == tmp_path / "repo"
