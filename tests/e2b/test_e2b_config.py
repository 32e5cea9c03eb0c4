"""The e2b/cube backend's config side: which template a row's image starts from, and a config naming the
backend without its SDK installed fails at load with one line naming the install."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mimo_core.environments.e2b.options import E2BOptions, template_for

REPO = Path(__file__).resolve().parents[2]


def test_a_template_per_image() -> None:
    plain = E2BOptions()
    assert template_for("registry.example/ns/python:3.11-slim", plain) == "registry-example-ns-python-3-11-slim"
    mapped = E2BOptions(templates={"python:3.11": "py311"}, template="one-for-all", fallback_template="base")
    assert template_for("python:3.11", mapped) == "py311"
    assert template_for("node:20", mapped) == "one-for-all"
    assert template_for(None, mapped) == "base" and template_for(None, plain) is None


def test_a_config_naming_e2b_without_the_sdk_is_one_line_naming_the_install(tmp_path: Path) -> None:
    from testkit.tasks import write_config

    cfg = write_config(tmp_path, "nosdk")
    cfg.write_text(cfg.read_text().replace("environment_class: local", "environment_class: cube"))
    code = (
        "import sys; sys.modules['e2b'] = None\n"  # the SDK not installed
        "from mimo_core.config_checks import load_config\n"
        "from mimo_core.errors import ConfigError\n"
        f"try:\n    load_config({str(cfg)!r})\nexcept ConfigError as e:\n    print(e)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "MIMO_TEST_BASE_URL": "http://127.0.0.1:9/v1", "MIMO_TEST_API_KEY": "k"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1 and "environment_class" in lines[0] and "mimoagent[cube]" in lines[0], out
