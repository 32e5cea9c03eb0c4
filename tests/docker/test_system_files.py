"""Grading a pristine system on docker: what the agent changed outside its repository is put back to the
image's version by `discard_system_changes` (container/system_files.py), and reported; the repository
is left alone. A real container of the test engine; the 'agent' is a script of shell commands."""

from __future__ import annotations

import time
from typing import Any

import pytest

# What a hostile agent leaves outside its repository: a .pth in the system site-packages, a python3 shim
# first on PATH, a user site-packages module, an /etc edit (appended, then back-dated: ctime still tells),
# a /conftest.py at the root, a sitecustomize, a deleted system file.
ATTACK = r"""
set -e
site=$(python3 -c 'import site; print(site.getsitepackages()[0])')
mkdir -p "$site"; echo 'import os; os.environ["FORGED"] = "1"' > "$site/zz_forge.pth"
printf '#!/bin/sh\necho forged\n' > /usr/local/bin/python3; chmod +x /usr/local/bin/python3
mkdir -p /root/.local/lib/python3.11/site-packages; echo 'x = 1' > /root/.local/lib/python3.11/site-packages/evil.py
echo 'forged:x:0:0::/:/bin/sh' >> /etc/passwd; touch -d 2001-01-01 /etc/passwd
printf 'def pytest_runtest_makereport(item, call):\n    pass\n' > /conftest.py
rm /etc/debian_version
chmod 777 /usr/share/doc
pyc=/usr/lib/python3/dist-packages/__pycache__; mkdir -p $pyc; echo x > $pyc/six.cpython-311.pyc
"""


def _agent(env: Any, script: str) -> None:
    res = env.execute(script, timeout=120)
    assert res.returncode == 0, res.output


def _grade(env: Any, keep: list[str]) -> tuple[list[str], float]:
    env.begin_grading()
    t = time.monotonic()
    report = env.discard_system_changes(keep)
    return report, time.monotonic() - t


def _count_references(env: Any) -> list[int]:
    """A list that gets an item each time `env` starts a reference sandbox of its image."""
    started: list[int] = []
    real = env._reference

    def counting() -> Any:
        started.append(1)
        return real()

    env._reference = counting
    return started


def _repo(env: Any) -> None:
    _agent(
        env,
        "cd /testbed && git init -q && echo 'def add(a, b): return a + b' > lib.py && "
        "printf 'def pytest_configure(config):\\n    pass\\n' > conftest.py && mkdir -p .venv && "
        "echo x > .venv/y.pth",
    )


def test_system_edits_are_put_back_and_reported(make_docker_env: Any) -> None:
    env = make_docker_env(cwd="/testbed", network=False)
    before = env.execute("cat /etc/passwd; ls -ld /usr/share/doc | cut -c1-10; cat /etc/debian_version").output
    _repo(env)
    repo_before = env.execute("cd /testbed && find . -type f | sort | xargs sha256sum").output
    _agent(env, ATTACK)
    report, took = _grade(env, ["/testbed", "/logs", "/tests", "/solution"])
    site = env.execute("python3 -c 'import site; print(site.getsitepackages()[0])'").output.strip()
    assert site.startswith("/"), site
    assert f"added {site}/zz_forge.pth" in report, report
    assert "added /usr/local/bin/python3" in report
    assert "added /root/.local" in report  # the folder, not every file under it
    assert not any(r.startswith("added /root/.local/") for r in report), report
    assert "changed /etc/passwd" in report
    assert "added /conftest.py" in report
    assert "deleted /etc/debian_version" in report
    assert "changed /usr/share/doc" in report
    assert not any("/testbed" in r or "/tmp" in r for r in report), report
    out = env.execute(
        f"ls {site}/zz_forge.pth /usr/local/bin/python3 /root/.local /conftest.py 2>&1; "
        "python3 -c 'import os; print(os.environ.get(\"FORGED\"))'"
    ).output
    assert out.count("No such file") == 4, out
    assert out.strip().endswith("None"), out
    # A planted bytecode file is removed, unreported (bytecode caches are removed quietly).
    pyc = "/usr/lib/python3/dist-packages/__pycache__/six.cpython-311.pyc"
    assert "No such file" in env.execute(f"ls {pyc} 2>&1").output
    assert env.execute("cat /etc/passwd; ls -ld /usr/share/doc | cut -c1-10; cat /etc/debian_version").output == before
    # The repository, its own conftest.py and .pth included, is the agent's work: untouched.
    assert env.execute("cd /testbed && find . -type f | sort | xargs sha256sum").output == repo_before
    # Idempotent: a second pass finds nothing left.
    assert env.discard_system_changes(["/testbed", "/logs", "/tests", "/solution"]) == []
    print(f"\ndiscard with changes: {took:.2f}s, {len(report)} entries")


def test_untouched_container_reports_nothing_and_is_fast(make_docker_env: Any) -> None:
    env = make_docker_env(cwd="/testbed", network=False)
    references = _count_references(env)
    report, took = _grade(env, ["/testbed"])
    assert report == [] and references == []
    print(f"\ndiscard, untouched: {took * 1000:.0f} ms")
    assert took < 1.0


def test_only_the_repository_changed_reports_nothing(make_docker_env: Any) -> None:
    """The honest control: an agent that edits its repository, runs python and pytest-like tools (bytecode
    caches in the system, files in /tmp) is reported nothing, and its repository is as it left it."""
    env = make_docker_env(cwd="/testbed", network=False)
    _repo(env)
    _agent(
        env,
        "cd /testbed && python3 -c 'import json, email.mime.text, lib' && mkdir -p /tmp/pytest-of-root/x "
        "&& echo t > /tmp/pytest-of-root/x/f && echo 'print(1)' > /tmp/scratch.py && python3 /tmp/scratch.py",
    )
    repo_before = env.execute("cd /testbed && find . -type f | sort | xargs sha256sum").output
    references = _count_references(env)
    report, took = _grade(env, ["/testbed", "/logs"])
    assert report == [], report
    assert references == [], "nothing outside the repository needed the image"
    assert env.execute("ls /tmp/pytest-of-root /tmp/scratch.py 2>&1").output.count("No such file") == 2
    assert env.execute("cd /testbed && find . -type f | sort | xargs sha256sum").output == repo_before
    print(f"\ndiscard, repository only: {took * 1000:.0f} ms")


def test_setup_changes_before_the_baseline_stay(make_docker_env: Any) -> None:
    """What the task's setup installed before `mark_system_baseline` is the task's, not the agent's."""
    env = make_docker_env(cwd="/testbed", network=False)
    _agent(
        env,
        "site=$(python3 -c 'import site; print(site.getsitepackages()[0])'); mkdir -p $site; "
        "echo /testbed > $site/task_editable.pth",
    )
    env.mark_system_baseline()
    time.sleep(0.05)
    _agent(env, "echo evil > /usr/local/bin/tool")
    report, _ = _grade(env, ["/testbed"])
    assert report == ["added /usr/local/bin/tool"]
    assert (
        env.execute(
            "cat $(python3 -c 'import site; print(site.getsitepackages()[0])')/task_editable.pth"
        ).output.strip()
        == "/testbed"
    )


def test_before_a_baseline_is_an_error(make_docker_env: Any) -> None:
    env = make_docker_env(cwd="/testbed", network=False)
    del env._system_baseline
    from mimo_core.errors import SandboxError

    with pytest.raises(SandboxError, match="mark_system_baseline"):
        env.discard_system_changes(["/testbed"])
