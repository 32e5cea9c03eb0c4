"""The red-team suite: every attack in attacks.py, on every backend, through the real CLI.

For each attack on the task it cannot solve: reward 0 or a grading error (never a pass), the canary
unread and unchanged, nothing written in the canary folder, no process or sandbox left, and the
attempt in the record. For each backend's run as a whole: the model never saw the runner's key or the
canary, no host service was reached, and the key is in no file in any encoding.
"""

from __future__ import annotations

import pytest

from tests.redteam.attacks import ATTACKS, BACKENDS
from tests.redteam.conftest import Outcome

CASES = [pytest.param(b, a, id=f"{b}-{a.name}") for b in BACKENDS for a in ATTACKS if b in a.backends]


@pytest.mark.parametrize(("backend", "attack"), CASES)
def test_attack_gets_no_reward_and_leaves_the_host_alone(outcome: Outcome, backend: str, attack) -> None:
    assert outcome.returncode == 0, outcome.stderr
    rec = outcome.records.get(attack.name)
    assert rec is not None, f"no record for {attack.name}: {outcome.stderr}"
    if attack.solvable:
        assert rec["exit_status"] == "submitted" and rec["reward"] == 1.0, rec  # the judge changed nothing
    else:
        assert rec["reward"] == 0.0 or rec["exit_status"] == "grading_error", (rec["exit_status"], rec["error"])
        assert not rec["passed"], rec
    assert outcome.after == outcome.before, "the canary folder changed"
    assert outcome.world.canary_text not in outcome.sent_to_model, "the agent read the canary"
    assert outcome.world.canary_text not in outcome.written
    expected = attack.expect | (attack.expect_local if backend == "local-bwrap" else set())
    missing = expected - set(rec.get("containment") or {})
    assert not missing, f"attempt not recorded: {sorted(missing)} (recorded: {rec.get('containment')})"
    if expected - {"lingering_processes"}:
        assert rec["containment_attempts"] >= 1, rec


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_run_of_every_attack_leaks_nothing(outcome: Outcome, backend: str) -> None:
    world = outcome.world
    assert outcome.returncode == 0, outcome.stderr
    assert world.tcp.connections == 0, world.tcp.received
    assert world.unix.connections == 0, world.unix.received
    assert world.abstract.connections == 0, world.abstract.received
    for variant in world.key_variants():
        assert variant not in outcome.written, f"a form of the key is in an output file: {variant[:6]}..."
    for case, seen in outcome.tool_outputs().items():
        if case != "echo_the_key_in_encodings":  # (that attacker typed the key itself)
            assert world.key not in seen, f"{case}: the agent got to see the runner's key"
        assert "mimo_core.cli" not in seen, f"{case}: the runner's command line is visible to the agent"
    agents = {r.headers.get("user-agent", "") for r in outcome.requests}
    assert not any("urllib" in a for a in agents), f"the agent called the model endpoint itself: {agents}"
    assert outcome.leftover_processes == [], outcome.leftover_processes
    assert outcome.leftover_sandboxes == [], outcome.leftover_sandboxes
    assert "forged" not in outcome.results_text
