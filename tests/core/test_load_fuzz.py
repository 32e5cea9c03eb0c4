"""Property: whatever a config file, an override or a dataset row holds, loading it either succeeds or
raises the one error class meant for bad input, with a one-line message naming the file, within a time
and memory bound per example. A traceback from any other exception is a bug this finds.

The inputs are generated: random nesting, types (booleans, huge integers, NaN, infinities), sizes and
encodings, grafted onto a valid config or row so that the loader gets past the first check too."""

from __future__ import annotations

import json
import math
import tempfile
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mimo_core.config import parse_override
from mimo_core.config_checks import load_config
from mimo_core.datasets.loader import load_tasks
from mimo_core.errors import ConfigError, DatasetError
from mimo_core.run.folder_names import folder_name
from mimo_core.run.job import input_fingerprint
from testkit.tasks import EVAL, write_config

MEMORY_BOUND = 64 << 20  # bytes allocated at the peak of one load
FUZZ = settings(max_examples=150, deadline=5000, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8", categories=["Cc", "Zl", "Zs", "Lo", "So"]), max_size=10),
    st.sampled_from(
        [
            "",
            " ",
            "/",
            "..",
            "../../x",
            "/etc",
            "a/b",
            "${HOME}",
            "${NOPE}",
            "${NOPE:-3}",
            "true",
            "1e999",
            "nan",
            "http://",
            "ftp://x",
            "*",
            "~",
            "null",
            "{{ task",
            "-1",
            "0",
        ]
    ),
)
values = st.recursive(
    scalars,
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.dictionaries(
            st.one_of(
                st.text(max_size=12),
                st.sampled_from(
                    ["agent", "model", "type", "step_limit", "timeout", "environment", "cwd", "base_url", "instance_id"]
                ),
            ),
            kids,
            max_size=4,
        )
    ),
    max_leaves=30,
)

CONFIG_PATHS = [
    ("agent",),
    ("agent", "type"),
    ("agent", "step_limit"),
    ("agent", "time_limit"),
    ("agent", "cost_limit"),
    ("agent", "tools"),
    ("agent", "system_template"),
    ("agent", "instance_template"),
    ("agent", "cli_args"),
    ("environment",),
    ("environment", "timeout"),
    ("environment", "cwd"),
    ("environment", "environment_class"),
    ("environment", "sandbox"),
    ("environment", "backend_kwargs"),
    ("environment", "env"),
    ("environment", "judge_agent"),
    ("model",),
    ("model", "model_name"),
    ("model", "protocol"),
    ("model", "model_kwargs"),
    ("model", "model_kwargs", "base_url"),
    ("model", "retry"),
    ("model", "retry", "timeout"),
    ("model", "retry", "max_attempts"),
    ("model", "pricing"),
    ("model", "pricing", "input"),
    ("grading",),
    ("grading", "collect"),
    ("use_dataset_env",),
    ("x-unknown",),
]
ROW_FIELDS = [
    "instance_id",
    "id",
    "dataset_type",
    "problem_statement",
    "cwd",
    "repo_dir",
    "repo_archive",
    "eval_script",
    "eval_timeout",
    "test_files",
    "env",
    "image",
    "rubric",
    "cpus",
    "memory_mb",
    "network",
    "collect",
    "verifier_mode",
    "FAIL_TO_PASS",
    "gold_patch",
    "metadata",
    "extra",
]


@contextmanager
def bounded() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
        _, peak = tracemalloc.get_traced_memory()
        assert peak < MEMORY_BOUND, f"a load allocated {peak >> 20} MiB at its peak"
    finally:
        tracemalloc.stop()


def _plain_config(folder: Path) -> Path:
    """The test kit's config with its endpoint written in (no environment variables needed here)."""
    path = write_config(folder, "cfg")
    path.write_text(
        path.read_text().replace("${MIMO_TEST_BASE_URL}", "http://127.0.0.1:1/v1").replace("${MIMO_TEST_API_KEY}", "k")
    )
    return path


def _graft(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    node = doc
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[path[-1]] = value
    return doc


def _one_line(e: Exception, where: str) -> None:
    text = str(e)
    assert "\n" not in text and text.strip(), repr(text)
    assert where in text, text


def _encode(text: str, encoding: str) -> bytes:
    return text.encode(encoding, errors="surrogateescape" if encoding == "utf-8" else "replace")


@FUZZ
@given(
    grafts=st.lists(st.tuples(st.sampled_from(CONFIG_PATHS), values), min_size=1, max_size=4),
    encoding=st.sampled_from(["utf-8", "utf-16", "latin-1"]),
    mangle=st.sampled_from(["none", "cut", "tabs"]),
)
def test_any_config_loads_or_is_one_config_error(
    grafts: list[tuple[tuple[str, ...], Any]], encoding: str, mangle: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = _plain_config(Path(tmp))
        doc = yaml.safe_load(base.read_text())
        for path, value in grafts:
            doc = _graft(doc, path, value)
        try:
            text = yaml.safe_dump(doc, allow_unicode=True)
        except (yaml.YAMLError, UnicodeEncodeError):
            return
        if mangle == "cut":
            text = text[: len(text) // 2]
        elif mangle == "tabs":
            text = text.replace("  ", "\t")
        base.write_bytes(_encode(text, encoding))
        with bounded():
            try:
                named = load_config(base)
            except ConfigError as e:
                _one_line(e, str(base))
                return
        assert named.config.environment.timeout > 0 and math.isfinite(named.config.environment.timeout)
        assert not isinstance(named.config.agent.step_limit, bool)


@FUZZ
@given(text=st.one_of(st.text(max_size=200), values.map(lambda v: json.dumps(v, allow_nan=True))))
def test_any_override_parses_or_is_one_config_error(text: str) -> None:
    with bounded():
        try:
            data = parse_override(text)
        except ConfigError as e:
            _one_line(e, "--override-config")
            return
    assert isinstance(data, dict)


def _line(row: Any, raw: bytes | None) -> bytes:
    if raw is not None:
        return raw
    try:
        return json.dumps(row, allow_nan=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError):
        return b"{}"


@FUZZ
@given(
    rows=st.lists(
        st.tuples(st.dictionaries(st.sampled_from(ROW_FIELDS), values, max_size=8), st.none() | st.binary(max_size=60)),
        min_size=1,
        max_size=3,
    ),
    start_valid=st.booleans(),
)
def test_any_row_loads_or_is_one_dataset_error(
    rows: list[tuple[dict[str, Any], bytes | None]], start_valid: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "repo").mkdir()
        lines = []
        for i, (fields, raw) in enumerate(rows):
            row = (
                {
                    "instance_id": f"r{i}",
                    "dataset_type": "generic",
                    "repo_dir": "repo",
                    "eval_script": EVAL,
                    "problem_statement": "x",
                }
                if start_valid
                else {}
            )
            row.update(fields)
            lines.append(_line(row, raw))
        data = folder / "rows.jsonl"
        data.write_bytes(b"\n".join(line.replace(b"\n", b" ") for line in lines) + b"\n")
        with bounded():
            try:
                tasks = load_tasks(str(data))
            except (DatasetError, ConfigError) as e:
                text = str(e)
                assert str(data) in text and text.strip(), text
                bad = text.splitlines()
                assert len(bad) == 1 or bad[0].endswith("fix them or remove them from the dataset:"), text
                return
            cfg = load_config(_plain_config(folder))
            for task in tasks:
                assert task.instance_id.strip() and 0 < len(folder_name(task.instance_id).encode()) <= 100
                assert len(input_fingerprint(cfg, task)) == 16
                task.template_vars()
