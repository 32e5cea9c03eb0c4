"""The Environment contract, lifecycle: stop leaves nothing behind (folders, processes, containers,
pods, network policies) and is idempotent; a failed start leaves nothing; a sandbox cannot be ended
from inside; a row without network gets only loopback. Run against every backend (or those whose
declared capabilities say they can)."""

from __future__ import annotations

import pytest

from mimo_core.errors import SandboxError
from tests.environments.conftest import CONFINED, Backend
from tests.environments.contract import gone, running, tag

NETWORK_DEVICES = "awk -F: 'NR>2{print $1}' /proc/net/dev"  # the devices of the sandbox's own namespace


def test_stop_leaves_nothing_behind_and_is_idempotent(backend: Backend) -> None:
    env = backend.make(network=False)
    t = tag()
    env.execute(f"mkdir -p locked/in && touch locked/in/f && chmod -R a-w locked; setsid sleep {t} &")
    assert backend.leftovers(env) != [] and len(running(t, 1)) == 1  # the probes see a live sandbox
    env.stop()
    env.stop()
    assert backend.leftovers(env) == []
    assert gone(t) == []
    with pytest.raises(SandboxError):
        env.execute("true")


def test_a_failed_start_leaves_nothing_and_stop_is_safe_before_and_after_it(backend: Backend) -> None:
    backend.make(start=False).stop()  # never started
    env = backend.make(start=False, seed_dir="/nonexistent/seed")
    with pytest.raises(SandboxError, match="seed_dir"):
        env.start()
    env.stop()  # what the rollout does after any failure
    assert backend.leftovers(env) == []


def test_the_backend_lists_match_the_declared_capabilities(backend: Backend) -> None:
    """CONFINED (below) must be exactly the backends that declare `confined` and `network_isolation`."""
    confined = backend.name in {p if isinstance(p, str) else p.values[0] for p in CONFINED}
    assert backend.caps.confined == confined and backend.caps.network_isolation == confined


@pytest.mark.parametrize("backend", CONFINED, indirect=True)
def test_the_agent_cannot_end_its_sandbox_from_inside(backend: Backend) -> None:
    env = backend.make()
    env.execute("pkill sleep; kill -9 -1; kill -9 1; true", timeout=10)
    assert env.execute("echo alive").output == "alive\n"
    env.execute("for i in 1 2 3; do (sleep 0.1 &) ; done; sleep 0.5")
    zombies = env.execute("ps -eo stat,args | awk '$1 ~ /^Z/' | wc -l").output.strip()
    assert zombies == "0"


@pytest.mark.parametrize("backend", CONFINED, indirect=True)
def test_a_row_without_network_gets_only_loopback(backend: Backend) -> None:
    off = backend.make(network=False)
    assert off.execute(NETWORK_DEVICES).output.split() == ["lo"]
    res = off.execute("exec 3<>/dev/tcp/1.1.1.1/80 && echo connected", timeout=10)
    assert res.returncode != 0 and "connected" not in res.output
    on = backend.make(network=True)
    assert on.execute(NETWORK_DEVICES).output.split() != ["lo"]
