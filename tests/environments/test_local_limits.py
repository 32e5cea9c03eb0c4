"""A bwrap sandbox has limits like a container's: its own cgroup caps its processes, memory and CPU (a
fork bomb or a runaway allocation stays inside), and the cgroup goes with the sandbox."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mimo_core.environments.local import cgroups
from tests.environments.conftest import MakeEnv
from tests.host_needs import need_bwrap, unavailable

_FORKS = r'''python3 -c "
import os, time
n = 0
try:
    while n < 200:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as e:
    print('refused:', e)
print(n)"'''


@pytest.fixture(autouse=True)
def _needs() -> None:
    need_bwrap()
    if not {"pids", "memory", "cpu"} <= set(cgroups.parent_dirs()):
        unavailable(
            "no writable cgroup controllers for pids, memory and cpu (root on cgroup v1, or a v2 "
            "cgroup that delegates them)"
        )


def test_a_sandbox_cannot_fork_past_its_pids_limit_and_stays_usable(make_env: MakeEnv) -> None:
    env = make_env(sandbox="bwrap", pids_limit=40, network=False)
    out = env.execute(_FORKS, timeout=60).output
    assert "refused:" in out and "Resource temporarily unavailable" in out, out
    assert int(out.split()[-1]) < 40  # the sandbox's own shells count too
    env.interrupt()
    assert env.execute("echo ok").output == "ok\n"


def test_a_sandbox_past_its_memory_is_killed_and_below_it_runs(make_env: MakeEnv) -> None:
    env = make_env(sandbox="bwrap", memory_mb=64, network=False)
    big = env.execute('python3 -c "b = bytearray(300 << 20); print(len(b))"; echo rc=$?', timeout=60).output
    assert "rc=137" in big and "Killed" in big, big  # the kernel's OOM killer, inside the sandbox's cgroup
    small = env.execute('python3 -c "b = bytearray(16 << 20); print(len(b))"', timeout=60)
    assert small.returncode == 0 and small.output.strip() == str(16 << 20)


def test_a_sandbox_gets_no_more_cpu_than_its_share(make_env: MakeEnv) -> None:
    """Two busy processes for 1.5 s of wall time with cpus: 0.5 get at most ~0.75 s of CPU between them
    (a busy machine only gives less: the bound holds under load)."""
    env = make_env(sandbox="bwrap", cpus=0.5, network=False)
    busy = (
        'python3 -c "\nimport os, time\nos.fork()\nt = time.time()\nwhile time.time() - t < 1.5:\n    pass\n'
        'print(os.times().user + os.times().system)"'
    )
    out = env.execute(f"{busy}; wait", timeout=60).output.split()
    used = sum(float(x) for x in out)
    assert len(out) == 2 and used < 0.5 * 1.5 * 1.4, out


def test_the_cgroup_goes_with_the_sandbox_and_leftovers_are_swept(make_env: MakeEnv) -> None:
    env = make_env(sandbox="bwrap", pids_limit=100, network=False)
    assert env._bwrap is not None and env._bwrap.cgroup is not None
    folders = list(env._bwrap.cgroup.folders)
    assert folders and all(os.path.isdir(f) for f in folders)
    procs = Path(folders[0], "cgroup.procs").read_text().split()
    assert procs, "the sandbox's processes are in its cgroup"
    env.stop()
    assert not any(os.path.exists(f) for f in folders)
    parent = cgroups.parent_dirs()["pids"]
    old, new = os.path.join(parent, "mimo-leftover-test"), os.path.join(parent, "mimo-fresh-test")
    os.mkdir(old)
    os.mkdir(new)
    try:
        os.utime(old, (time.time() - 600,) * 2)  # a runner SIGKILLed ten minutes ago
        assert cgroups.sweep() >= 1
        assert not os.path.exists(old)
        assert os.path.exists(new)  # just made: maybe a sandbox about to join it
    finally:
        for f in (old, new):
            if os.path.exists(f):
                os.rmdir(f)
