"""Grading a pristine system on kubernetes (the stand-in, whose pods are containers of the test engine):
the same attack as on docker, put back from a reference pod of the image; the repository left alone."""

from __future__ import annotations

from typing import Any

from tests.docker.test_system_files import ATTACK, _agent, _grade, _repo

KEEP = ["/testbed", "/logs", "/tests", "/solution"]


def test_system_edits_are_put_back_and_reported(make_k8s_env: Any) -> None:
    env = make_k8s_env(cwd="/testbed", network=False)
    before = env.execute("cat /etc/passwd; ls -ld /usr/share/doc | cut -c1-10; cat /etc/debian_version").output
    _repo(env)
    repo_before = env.execute("cd /testbed && find . -type f | sort | xargs sha256sum").output
    _agent(env, ATTACK + "\necho '10.9.9.9 pypi.org' >> /etc/hosts\n")
    report, took = _grade(env, KEEP)
    site = env.execute("python3 -c 'import site; print(site.getsitepackages()[0])'").output.strip()
    for entry in (
        f"added {site}/zz_forge.pth",
        "added /usr/local/bin/python3",
        "added /root/.local",
        "changed /etc/passwd",
        "added /conftest.py",
        "deleted /etc/debian_version",
        "changed /usr/share/doc",
    ):
        assert entry in report, (entry, report)
    assert not any("/testbed" in r or "/tmp" in r for r in report), report
    out = env.execute(f"ls {site}/zz_forge.pth /usr/local/bin/python3 /root/.local /conftest.py 2>&1").output
    assert out.count("No such file") == 4, out
    assert env.execute("cat /etc/passwd; ls -ld /usr/share/doc | cut -c1-10; cat /etc/debian_version").output == before
    assert env.execute("cd /testbed && find . -type f | sort | xargs sha256sum").output == repo_before
    assert env.discard_system_changes(KEEP) == []
    print(f"\ndiscard with changes (k8s): {took:.2f}s")


def test_untouched_and_repository_only_report_nothing(make_k8s_env: Any) -> None:
    env = make_k8s_env(cwd="/testbed", network=False)
    report, took = _grade(env, KEEP)
    assert report == []
    print(f"\ndiscard, untouched (k8s): {took * 1000:.0f} ms")
    env2 = make_k8s_env(cwd="/testbed", network=False)
    _repo(env2)
    _agent(env2, "cd /testbed && python3 -c 'import json, lib' && echo t > /tmp/t")
    repo_before = env2.execute("cd /testbed && find . -type f | sort | xargs sha256sum").output
    report, _ = _grade(env2, KEEP)
    assert report == []
    assert env2.execute("cd /testbed && find . -type f | sort | xargs sha256sum").output == repo_before
