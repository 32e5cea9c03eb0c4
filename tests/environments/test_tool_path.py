"""Tool commands find the task's programs, not mimoagent's own virtualenv."""

from __future__ import annotations

import os
import sys

import pytest

from tests.environments.conftest import MakeEnv

OWN_BIN = os.path.join(sys.prefix, "bin")


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="the tests are not running inside a virtualenv")
def test_commands_do_not_find_mimoagents_virtualenv_first(make_env: MakeEnv, monkeypatch) -> None:
    monkeypatch.setenv("PATH", f"{OWN_BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}")
    env = make_env()
    out = env.execute('echo "$PATH"; command -v python3 || true').output
    assert OWN_BIN not in out
    assert "/usr/bin" in out.splitlines()[0]
