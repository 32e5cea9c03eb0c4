"""Every MIMOAGENT_* variable is read in mimo_core/settings.py, when asked, and listed in docs/settings.md."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mimo_core.settings import (
    CodeLocationSettings,
    CoreSettings,
    NightlySettings,
    RecordingSettings,
    SettingsError,
    observer_enabled,
    variables,
)

REPO = Path(__file__).resolve().parents[2]
SETTINGS = REPO / "mimo_core" / "settings.py"


def _reads_a_variable(node: ast.AST) -> bool:
    """os.environ.get("MIMOAGENT_X"), os.getenv(...), os.environ["MIMOAGENT_X"], "MIMOAGENT_X" in os.environ,
    also with an f-string name."""

    def ours(arg: ast.AST) -> bool:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value.startswith("MIMOAGENT_")
        if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
            return str(arg.values[0].value).startswith("MIMOAGENT_")
        return False

    def environ(expr: ast.AST) -> bool:
        return (
            isinstance(expr, ast.Attribute)
            and expr.attr == "environ"
            or isinstance(expr, ast.Name)
            and expr.id in ("environ", "env")
        )

    if isinstance(node, ast.Call) and node.args and ours(node.args[0]):
        f = node.func
        return isinstance(f, ast.Attribute) and (f.attr == "getenv" or f.attr in ("get", "pop") and environ(f.value))
    if isinstance(node, ast.Subscript) and environ(node.value):
        return ours(node.slice)
    if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
        return ours(node.left) and environ(node.comparators[0])
    return False


def test_no_module_but_settings_reads_a_mimoagent_variable() -> None:
    offenders = []
    for package in ("mimo_core", "mimo_assets", "resources"):
        for path in sorted((REPO / package).rglob("*.py")):
            if path == SETTINGS:
                continue
            tree = ast.parse(path.read_text(), str(path))
            offenders += [f"{path.relative_to(REPO)}:{n.lineno}" for n in ast.walk(tree) if _reads_a_variable(n)]
    assert offenders == []
    assert _reads_a_variable(ast.parse('os.environ.get("MIMOAGENT_X", "")').body[0].value)  # the check can fail


def test_the_docs_table_lists_exactly_the_variables_read() -> None:
    text = (REPO / "docs" / "settings.md").read_text()
    table = text.split("| variable |", 1)[1].split("\n\n", 1)[0]
    documented = set(re.findall(r"^\| `(MIMOAGENT_[A-Z_<>]+)` \|", table, flags=re.MULTILINE))
    assert documented == set(variables())
    assert "docs/settings.md" in (REPO / "README.md").read_text()


def test_defaults_when_unset_or_empty() -> None:
    assert CodeLocationSettings.read({}).output_root == "~/.mimoagent/outputs"
    assert CodeLocationSettings.read({"MIMOAGENT_OUTPUT_ROOT": ""}).output_root == "~/.mimoagent/outputs"
    assert CodeLocationSettings.read({}).backfill_partitions_per_run == 100
    assert RecordingSettings.read({}).wait_s == 0.5 and RecordingSettings.read({}).recorder_idle_s == 120
    assert NightlySettings.read({}).workers == 8 and NightlySettings.read({}).split is None
    assert CoreSettings.read({}).viewer_url == "http://127.0.0.1:8765"


def test_values_keep_their_forms() -> None:
    rec = RecordingSettings.read(
        {"MIMOAGENT_DAGSTER_WAIT": "all", "MIMOAGENT_DAGSTER_RECORDER_IDLE": "-3", "MIMOAGENT_DAGSTER_NICE": "lots"}
    )
    assert (rec.wait_s, rec.recorder_idle_s, rec.recorder_nice) == (None, 0.0, 10)
    assert RecordingSettings.read({"MIMOAGENT_DAGSTER_WAIT": "soon"}).wait_s == 0.5  # lenient: the default
    nightly = NightlySettings.read({"MIMOAGENT_NIGHTLY_CONFIGS": "a.yaml::b.yaml", "MIMOAGENT_NIGHTLY_PAIRED": "Yes"})
    assert nightly.configs == ["a.yaml", "b.yaml"] and nightly.paired is True
    assert CoreSettings.read({"MIMOAGENT_VIEWER_URL": "http://h:1/"}).viewer_url == "http://h:1"
    assert not observer_enabled("dagster", {"MIMOAGENT_DAGSTER": "off"})
    assert not observer_enabled("dagster", {"MIMOAGENT_OBSERVERS": "0"})
    assert observer_enabled("dagster", {})


def test_a_strict_value_fails_in_one_line_naming_the_variable() -> None:
    with pytest.raises(SettingsError, match=r"^MIMOAGENT_NIGHTLY_ROLLOUTS='three': Input should be a valid integer"):
        NightlySettings.read({"MIMOAGENT_NIGHTLY_ROLLOUTS": "three"})
    with pytest.raises(SettingsError, match=r"^MIMOAGENT_BACKFILL_PARTITIONS_PER_RUN='-1': expected a whole number"):
        CodeLocationSettings.read({"MIMOAGENT_BACKFILL_PARTITIONS_PER_RUN": "-1"})
    assert CoreSettings.read({"MIMOAGENT_NIGHTLY_ROLLOUTS": "three"}).observers  # other readers never see it


def test_settings_are_read_when_asked_not_at_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIMOAGENT_DATASET", "first.jsonl")
    assert CodeLocationSettings.read().dataset == "first.jsonl"
    monkeypatch.setenv("MIMOAGENT_DATASET", "second.jsonl")
    assert CodeLocationSettings.read().dataset == "second.jsonl"


def test_reading_settings_imports_nothing_heavy() -> None:
    code = (
        "import sys, mimo_core.settings as s; s.CoreSettings.read(); s.RecordingSettings.read(); "
        "print(sorted(m for m in ('dagster', 'polars', 'openai', 'anthropic', 'yaml') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
